/**
 * `@mcp-fleet/core/node`: what an adapter on Node's `http` server needs, once, so that adapters carry no rule of
 * their own. A Node request becomes a Web `Request` for `fleet.handle`, its `Response` goes back on the Node
 * response, and `mountPath` decides which requests are the fleet's.
 */
export { mountPath } from '../http/mount-path.js';
export { atOnce } from '../http/at-once.js';
export { clientAddressBehindProxies } from './client-address.js';
export { answerClientError } from './client-error.js';
export { toWebRequest, type ToWebRequestOptions } from './request.js';
export { writeWebResponse } from './response.js';
export { readWholeBody } from './whole-body.js';

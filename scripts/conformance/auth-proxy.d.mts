/** Types of auth-proxy.mjs, for the test that imports it. */
export declare function startAuthProxy(origin: string, key: string): Promise<{ origin: string; close: () => Promise<void> }>;

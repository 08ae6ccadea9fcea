import { createPrivateKey, type KeyObject } from 'node:crypto';

/**
 * The private key of oauth2 `private_key_jwt` client authentication (RFC 7523): read where the configuration is
 * judged (a 400 at create) and where the token request signs with it (`mcp/oauth.ts`). Nothing here ever quotes
 * the key: a message says what is wrong with it, not what it is.
 */

/** JWS algorithms a `private_key_jwt` assertion may be signed with. */
export const JWT_ALGORITHMS = ['RS256', 'RS384', 'RS512', 'PS256', 'PS384', 'PS512', 'ES256', 'ES384', 'ES512', 'EdDSA'] as const;
export type JwtAlgorithm = (typeof JWT_ALGORITHMS)[number];

/**
 * A PEM private key (PKCS#8 `BEGIN PRIVATE KEY`, PKCS#1 `BEGIN RSA PRIVATE KEY`, SEC1 `BEGIN EC PRIVATE KEY`) or a
 * JWK private key as a JSON string; undefined when it is neither, or a public key only.
 */
export function readPrivateKey(text: string): KeyObject | undefined {
  try {
    const trimmed = text.trim();
    if (trimmed.startsWith('{')) {
      const jwk = JSON.parse(trimmed) as Record<string, unknown>;
      if (typeof jwk !== 'object' || jwk === null || typeof jwk.d !== 'string') return undefined;
      return createPrivateKey({ key: jwk as import('node:crypto').JsonWebKey, format: 'jwk' });
    }
    if (!trimmed.startsWith('-----BEGIN')) return undefined;
    return createPrivateKey({ key: trimmed, format: 'pem' });
  } catch {
    return undefined;
  }
}

/** The `kid` a JWK carries, if any: the default `key_id`. */
export function jwkKeyId(text: string): string | undefined {
  const trimmed = text.trim();
  if (!trimmed.startsWith('{')) return undefined;
  try {
    const kid = (JSON.parse(trimmed) as { kid?: unknown }).kid;
    return typeof kid === 'string' && kid !== '' ? kid : undefined;
  } catch {
    return undefined;
  }
}

const EC_ALGORITHM: Readonly<Record<string, JwtAlgorithm>> = { prime256v1: 'ES256', secp384r1: 'ES384', secp521r1: 'ES512' };

/** The algorithms a key can sign with; the first is the default when `algorithm` is not configured. */
export function algorithmsFor(key: KeyObject): JwtAlgorithm[] {
  switch (key.asymmetricKeyType) {
    case 'rsa':
      return ['RS256', 'RS384', 'RS512', 'PS256', 'PS384', 'PS512'];
    case 'rsa-pss':
      return ['PS256', 'PS384', 'PS512'];
    case 'ec': {
      const algorithm = EC_ALGORITHM[key.asymmetricKeyDetails?.namedCurve ?? ''];
      return algorithm === undefined ? [] : [algorithm];
    }
    case 'ed25519':
      return ['EdDSA'];
    default:
      return [];
  }
}

// An OAuth2 issuer of the client-credentials grant for `scripts/services up --oauth2`, on
// panva's oidc-provider (OpenID Certified; from the npm registry, installed by scripts/services).
// Discovery at /.well-known/openid-configuration, tokens at /token, keys at /jwks; access tokens
// are RS256 JWTs whose `aud` is the configured audience and whose `sub` is the client's role, as
// Pulsar's AuthenticationProviderToken verifies them with the issuer's public key.
//
//   node issuer.mjs config.json
//   config.json: {"host": "127.0.0.1", "port": 9090, "audience": "...", "ttl": 3600,
//                 "private_key_pem": "key.pem",
//                 "clients": [{"client_id": "...", "client_secret": "...", "sub": "..."}]}
//
// Prints `READY <issuer>` once it listens.
import crypto from 'node:crypto';
import fs from 'node:fs';
import Provider from 'oidc-provider';

const config = JSON.parse(fs.readFileSync(process.argv[2], 'utf8'));
const issuer = `http://${config.host}:${config.port}`;
const key = crypto.createPrivateKey(fs.readFileSync(config.private_key_pem));
const jwk = { ...key.export({ format: 'jwk' }), kid: 'pes', alg: 'RS256', use: 'sig' };
const roles = Object.fromEntries(config.clients.map((c) => [c.client_id, c.sub ?? c.client_id]));
const RESOURCE = 'urn:pulsar-external-schema:broker'; // the one resource; `aud` is the audience

const provider = new Provider(issuer, {
  clients: config.clients.map((c) => ({
    client_id: c.client_id,
    client_secret: c.client_secret,
    grant_types: ['client_credentials'],
    response_types: [],
    redirect_uris: [],
    token_endpoint_auth_method: 'client_secret_post',
  })),
  jwks: { keys: [jwk] },
  features: {
    devInteractions: { enabled: false },
    clientCredentials: { enabled: true },
    resourceIndicators: {
      enabled: true,
      defaultResource: async () => RESOURCE,
      useGrantedResource: async () => true,
      getResourceServerInfo: async () => ({
        scope: '',
        audience: config.audience,
        accessTokenTTL: config.ttl,
        accessTokenFormat: 'jwt',
        jwt: { sign: { alg: 'RS256' } },
      }),
    },
  },
  formats: {
    customizers: {
      jwt: async (ctx, token, jwt) => {
        jwt.payload.sub = roles[token.clientId] ?? jwt.payload.sub;
      },
    },
  },
});

provider.listen(config.port, config.host, () => console.log(`READY ${issuer}`));

// A real OpenID provider for the tests: the certified `oidc-provider` package (installed by scripts/test.sh
// into TRUEFORGE_TEST_OIDC_DIR), configured with one confidential client and a few accounts. Its development
// login form takes any password; the consent step is skipped for the test client.
//
//   node provider.mjs serve   (env below)  prints "ready <issuer>" once it listens
//   node provider.mjs mint    prints an ID token signed with a stored key, claims from OIDC_MINT_CLAIMS
//                             (for what the provider will not issue, such as an already expired token)
//
// Environment: OIDC_PROVIDER_DIR (where node_modules/oidc-provider is), OIDC_PORT, OIDC_CLIENT_ID,
// OIDC_CLIENT_SECRET, OIDC_REDIRECT_URI, OIDC_ACCOUNTS (JSON: account id -> extra claims), OIDC_KEY_DIR and
// OIDC_KIDS (comma-separated key ids: keys are made once per id and kept in the directory; the first signs).
import { generateKeyPairSync } from 'node:crypto';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

const env = process.env;
const moduleDir = join(env.OIDC_PROVIDER_DIR, 'node_modules');
const { default: Provider } = await import(join(moduleDir, 'oidc-provider', 'lib', 'index.js'));
const jose = await import(join(moduleDir, 'jose', 'dist', 'webapi', 'index.js'));

function signingKeys() {
  return env.OIDC_KIDS.split(',').map((kid) => {
    const file = join(env.OIDC_KEY_DIR, `${kid}.json`);
    if (!existsSync(file)) {
      const { privateKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
      const jwk = { ...privateKey.export({ format: 'jwk' }), kid, alg: 'RS256', use: 'sig' };
      writeFileSync(file, JSON.stringify(jwk));
    }
    return JSON.parse(readFileSync(file, 'utf8'));
  });
}

const issuer = `http://127.0.0.1:${env.OIDC_PORT}`;

if (process.argv[2] === 'mint') {
  const [key] = signingKeys();
  const privateKey = await jose.importJWK(key, 'RS256');
  const claims = JSON.parse(env.OIDC_MINT_CLAIMS);
  const token = await new jose.SignJWT(claims)
    .setProtectedHeader({ alg: 'RS256', kid: key.kid })
    .sign(privateKey);
  process.stdout.write(token);
  process.exit(0);
}

const accounts = JSON.parse(env.OIDC_ACCOUNTS);
const provider = new Provider(issuer, {
  clients: [
    {
      client_id: env.OIDC_CLIENT_ID,
      client_secret: env.OIDC_CLIENT_SECRET,
      redirect_uris: [env.OIDC_REDIRECT_URI],
      grant_types: ['authorization_code'],
      response_types: ['code'],
      token_endpoint_auth_method: 'client_secret_post',
    },
  ],
  jwks: { keys: signingKeys() },
  pkce: { required: () => true },
  // The claims go into the ID token itself (not only the userinfo endpoint).
  conformIdTokenClaims: false,
  claims: { openid: ['sub', 'tenant', 'groups'], email: ['email'], profile: ['name'] },
  async findAccount(ctx, id) {
    if (!Object.hasOwn(accounts, id)) return undefined;
    return { accountId: id, async claims() { return { sub: id, email: `${id}@example.com`, ...accounts[id] }; } };
  },
  // A first-party client: no consent screen.
  async loadExistingGrant(ctx) {
    const grant = new ctx.oidc.provider.Grant({ clientId: ctx.oidc.client.clientId, accountId: ctx.oidc.session.accountId });
    grant.addOIDCScope('openid email profile');
    grant.addOIDCClaims(['tenant', 'groups']);
    await grant.save();
    return grant;
  },
});
provider.listen(Number(env.OIDC_PORT), '127.0.0.1', () => {
  process.stdout.write(`ready ${issuer}\n`);
});

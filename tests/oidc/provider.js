// The OpenID provider the tests log in through: panva's certified oidc-provider, with
// one confidential client that must use PKCE and three accounts.
//
//   node provider.js PORT REDIRECT_URI CLIENT_SECRET [AUTH_METHOD]
//
// AUTH_METHOD is how the client must authenticate at the token endpoint,
// client_secret_basic by default; with client_secret_post the discovery document lists
// that method first, as django-oidc-provider's does, and a token request with HTTP Basic
// is refused with invalid_client (oidc-provider itself would take either). It listens on 127.0.0.1:PORT (issuer http://127.0.0.1:PORT) and prints "listening"
// once it does. The development login page takes any password; the account is the login
// name. Consent is granted without a page (a first-party client), so a login is one form.
//
// Beside the provider, two test-only routes change what it does, so that the tests can
// check what sliced refuses with tokens a real provider would never send:
//   POST /test/next-id-token?mode=MODE  the next ID token is re-signed: `foreign-key`
//       (another RSA key, under the provider's key id), `other-audience` (for another
//       client, with the provider's key), `expired` (with the provider's key)
//   POST /test/rotate-key  from now on ID tokens are signed with a second key, which
//       the key set (/jwks) then lists too, as a provider rotating its keys does
//   POST /test/hold-next-token  the next token request is taken and never answered, as
//       by a provider that stalls
//   GET /test/held  {"open": N, "closed": N}: the held token requests whose client is
//       still connected, and those whose client closed its connection

import { createServer } from 'node:http';
import { createSign, generateKeyPairSync } from 'node:crypto';
import Provider from 'oidc-provider';

const [port, redirectUri, clientSecret, authMethod = 'client_secret_basic'] = process.argv.slice(2);
const authMethods = ['client_secret_basic', 'client_secret_post'];
if (!port || !redirectUri || !clientSecret || !authMethods.includes(authMethod)) {
  console.error('usage: node provider.js PORT REDIRECT_URI CLIENT_SECRET [client_secret_basic|client_secret_post]');
  process.exit(2);
}
const issuer = `http://127.0.0.1:${port}`;

// The groups claim gives sliced's role (see [auth.roles] in the tests' configuration).
// Ada's ID token carries her groups; Bob's groups come from the userinfo endpoint only,
// as many providers send them; Eve is in no group sliced knows, and has no name claim.
const accounts = {
  ada: { name: 'Ada Lovelace', email: 'ada@example.com', groups: ['net-admins'], groupsInIdToken: true },
  bob: { name: 'Bob Builder', email: 'bob@example.com', groups: ['staff'], groupsInIdToken: false },
  eve: { email: 'eve@example.com', groups: ['visitors'], groupsInIdToken: true },
};

function rsaKey(kid) {
  const { privateKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
  return { privateKey, jwk: { ...privateKey.export({ format: 'jwk' }), kid, use: 'sig', alg: 'RS256' } };
}

function publicPart({ kty, n, e, kid, use, alg }) {
  return { kty, n, e, kid, use, alg };
}

const providerKey = rsaKey('provider-key');
const rotatedKey = rsaKey('rotated-key');
let rotated = false;
let nextIdTokenMode = null;

const provider = new Provider(issuer, {
  clients: [{
    client_id: 'sliced',
    client_secret: clientSecret,
    redirect_uris: [redirectUri],
    grant_types: ['authorization_code'],
    response_types: ['code'],
    token_endpoint_auth_method: authMethod,
  }],
  // The advertised methods, the client's own first.
  clientAuthMethods: [authMethod, ...authMethods.filter((method) => method !== authMethod)],
  pkce: { required: () => true },
  jwks: { keys: [providerKey.jwk] },
  cookies: { keys: ['sliced-oidc-fixture-cookie-key'] },
  claims: {
    openid: ['sub'],
    email: ['email', 'email_verified'],
    profile: ['name', 'preferred_username'],
    groups: ['groups'],
  },
  // Scope claims go into the ID token too, unless an account keeps them for userinfo.
  conformIdTokenClaims: false,
  features: { devInteractions: { enabled: true } },
  async findAccount(_ctx, id) {
    const account = accounts[id];
    if (!account) return undefined;
    return {
      accountId: id,
      async claims(use) {
        const claims = {
          sub: id,
          preferred_username: id,
          email: account.email,
          email_verified: true,
        };
        if (account.name) claims.name = account.name;
        if (use === 'userinfo' || account.groupsInIdToken) claims.groups = account.groups;
        return claims;
      },
    };
  },
  // A first-party client: every scope it asks for is granted without a consent page.
  async loadExistingGrant(ctx) {
    const grantId = ctx.oidc.result?.consent?.grantId
      || ctx.oidc.session.grantIdFor(ctx.oidc.client.clientId);
    const grant = grantId
      ? await ctx.oidc.provider.Grant.find(grantId)
      : new ctx.oidc.provider.Grant({
        clientId: ctx.oidc.client.clientId,
        accountId: ctx.oidc.session.accountId,
      });
    grant.addOIDCScope([...ctx.oidc.requestParamScopes].join(' '));
    await grant.save();
    return grant;
  },
});

const base64url = (value) => Buffer.from(JSON.stringify(value)).toString('base64url');
const decoded = (part) => JSON.parse(Buffer.from(part, 'base64url').toString());

function signed(header, payload, privateKey) {
  const input = `${base64url(header)}.${base64url(payload)}`;
  const signature = createSign('RSA-SHA256').update(input).sign(privateKey).toString('base64url');
  return `${input}.${signature}`;
}

// The ID token the provider issued, re-signed as `mode` says.
function resigned(idToken, mode) {
  const [headerPart, payloadPart] = idToken.split('.');
  const header = decoded(headerPart);
  const payload = decoded(payloadPart);
  const now = Math.floor(Date.now() / 1000);
  switch (mode) {
    case 'foreign-key':
      return signed(header, payload, rsaKey(header.kid).privateKey);
    case 'other-audience':
      return signed(header, { ...payload, aud: 'another-client', azp: 'another-client' }, providerKey.privateKey);
    case 'expired':
      return signed(header, { ...payload, iat: now - 7200, exp: now - 3600 }, providerKey.privateKey);
    case 'rotated':
      return signed({ ...header, kid: rotatedKey.jwk.kid }, payload, rotatedKey.privateKey);
    default:
      throw new Error(`unknown mode ${mode}`);
  }
}

provider.use(async (ctx, next) => {
  await next();
  if (ctx.path === '/token' && ctx.status === 200 && ctx.body?.id_token) {
    const mode = nextIdTokenMode ?? (rotated ? 'rotated' : null);
    nextIdTokenMode = null;
    if (mode) ctx.body = { ...ctx.body, id_token: resigned(ctx.body.id_token, mode) };
  }
  if (ctx.path === '/jwks' && ctx.status === 200 && rotated) {
    ctx.body = { keys: [...ctx.body.keys, publicPart(rotatedKey.jwk)] };
  }
});

const providerHandler = provider.callback();
let holdNextToken = false;
const held = { open: 0, closed: 0 };
const modes = new Set(['foreign-key', 'other-audience', 'expired']);

createServer((req, res) => {
  const url = new URL(req.url, issuer);
  if (req.method === 'POST' && url.pathname === '/test/next-id-token') {
    const mode = url.searchParams.get('mode');
    res.statusCode = modes.has(mode) ? 204 : 400;
    if (modes.has(mode)) nextIdTokenMode = mode;
    res.end();
  } else if (req.method === 'POST' && url.pathname === '/test/rotate-key') {
    rotated = true;
    res.statusCode = 204;
    res.end();
  } else if (req.method === 'POST' && url.pathname === '/test/hold-next-token') {
    holdNextToken = true;
    res.statusCode = 204;
    res.end();
  } else if (req.method === 'GET' && url.pathname === '/test/held') {
    res.setHeader('Content-Type', 'application/json');
    res.end(JSON.stringify(held));
  } else if (authMethod === 'client_secret_post' && req.method === 'POST'
      && url.pathname === '/token' && req.headers.authorization !== undefined) {
    res.statusCode = 401;
    res.setHeader('Content-Type', 'application/json');
    res.end(JSON.stringify({
      error: 'invalid_client',
      error_description: 'this client authenticates with client_secret_post',
    }));
  } else if (holdNextToken && req.method === 'POST' && url.pathname === '/token') {
    holdNextToken = false;
    held.open += 1;
    req.socket.on('close', () => {
      held.open -= 1;
      held.closed += 1;
    });
    req.resume();
  } else {
    providerHandler(req, res);
  }
}).listen(Number(port), '127.0.0.1', () => {
  console.log('listening');
});

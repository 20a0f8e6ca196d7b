import { createApi } from './api.js';

const issuer = process.env.TESSERA_ISSUER ?? 'http://localhost:8080';
const apiKeyId = process.env.TESSERA_API_KEY_ID;
if (!apiKeyId) {
  console.error('example-express-api: set TESSERA_API_KEY_ID to the API key id printed by `npm start`');
  process.exit(2);
}
const port = Number(process.env.PORT ?? 3001);
const app = createApi({
  issuer,
  apiKeyId,
  allowedOrigin: process.env.ALLOWED_ORIGIN ?? new URL(issuer).origin,
  online: process.env.ONLINE === 'true',
});
app.listen(port, '127.0.0.1', () =>
  console.log(`sample API on http://127.0.0.1:${port} (try GET /api/me with a Bearer token)`),
);

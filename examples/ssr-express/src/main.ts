import { createApp } from './app.js';

const issuer = process.env.TESSERA_ISSUER ?? 'http://localhost:8080';
const apiKeyId = process.env.TESSERA_API_KEY_ID;
if (!apiKeyId) {
  console.error('example-ssr-express: set TESSERA_API_KEY_ID to the API key id printed by `npm start`');
  process.exit(2);
}
const port = Number(process.env.PORT ?? 3002);
const appOrigin = process.env.APP_ORIGIN ?? `http://localhost:${port}`;
const app = createApp({
  issuer,
  apiKeyId,
  appOrigin,
  // Plain http://localhost in development only: Safari keeps no Secure cookie there.
  insecureLocalhostCookies: process.env.INSECURE_LOCALHOST_COOKIES === 'true',
});
app.listen(port, '127.0.0.1', () => console.log(`SSR example on ${appOrigin}`));

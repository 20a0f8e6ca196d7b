import { createTesseraSsr } from '@tessera/ssr';

// One instance for the app: the auth routes, the proxy and the pages share its renewals.
export const tessera = createTesseraSsr({
  issuer: process.env.TESSERA_ISSUER ?? 'http://localhost:8080',
  apiKeyId: process.env.TESSERA_API_KEY_ID ?? '',
  appOrigin: process.env.APP_ORIGIN ?? 'http://localhost:3000',
});

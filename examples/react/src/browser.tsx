// @jsxRuntime automatic
import { createTesseraClient } from '@tessera/client';
import { TesseraProvider } from '@tessera/react';
import { hydrateRoot } from 'react-dom/client';
import { App } from './app.js';

const config = JSON.parse(document.getElementById('tessera-config')!.textContent!) as {
  issuer: string;
  apiKeyId: string;
};
const client = createTesseraClient(config);
// No initialSession: the tokens live in this browser, so the server rendered "loading" — and so
// does the first render here, which is what keeps hydration free of mismatches.
hydrateRoot(
  document.getElementById('root')!,
  <TesseraProvider client={client}>
    <App />
  </TesseraProvider>,
);

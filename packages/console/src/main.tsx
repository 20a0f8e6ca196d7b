import './styles.css';
import { createTesseraClient } from '@tessera/client';
import { createRoot } from 'react-dom/client';
import { App } from './app.js';
import { locale, t } from './i18n/index.js';
import { BASE } from './router.js';

/** What the server tells the console about itself: the console project and the issuer. */
interface ConsoleConfig {
  api_key_id: string;
  issuer: string;
}

// The page's language is the one its texts are in (index.html says en until the script runs).
document.documentElement.lang = locale;
const mount = document.getElementById('root')!;
const root = createRoot(mount);
try {
  const response = await fetch(`${BASE}/config.json`, { credentials: 'omit' });
  if (!response.ok) throw new Error(`config.json answered ${response.status}`);
  const config = (await response.json()) as ConsoleConfig;
  // The console signs in to the service that serves it: the same origin, whatever the issuer says.
  const client = createTesseraClient({ issuer: location.origin, apiKeyId: config.api_key_id });
  root.render(<App client={client} issuer={location.origin} />);
} catch {
  root.render(
    <main className="center">
      <h1>{t.appName}</h1>
      <p className="notice error" role="alert">
        {t.errStart}
      </p>
    </main>,
  );
}

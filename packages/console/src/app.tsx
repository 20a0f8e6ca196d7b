import type { TesseraClient } from '@tessera/client';
import { type ReactNode, useCallback, useEffect, useMemo, useState } from 'react';
import { type ConsoleApi, consoleApi } from './api/console-api.js';
import type { Me } from './api/types.js';
import { errorText, Loading } from './components/ui.js';
import { ConsoleProvider } from './context.js';
import { t } from './i18n/index.js';
import { NoAccess, SignInPage } from './pages/sign-in.js';
import { BASE, LAST_PROJECT, navigate, pathOf, type Route, useLocation, withQuery } from './router.js';
import { Shell } from './shell.js';

type Status =
  | { state: 'loading' }
  | { state: 'signed-out' }
  | { state: 'no-access' }
  | { state: 'failed'; error: unknown }
  | { state: 'ready'; me: Me };

/** The project a route names, if any. */
const projectOf = (route: Route): string | undefined => ('project' in route ? route.project : undefined);

/**
 * The console: the member's session (the console project's client), who they are
 * (`/v1/console/me`), and the page the address names — or the sign-in page.
 */
export function App(props: { client: TesseraClient; issuer: string }): ReactNode {
  const { client, issuer } = props;
  const [status, setStatus] = useState<Status>({ state: 'loading' });
  const { route, query, path } = useLocation();

  const api: ConsoleApi = useMemo(
    () =>
      consoleApi({
        issuer,
        accessToken: () => client.getAccessToken(),
        onUnauthorized: () => setStatus({ state: 'signed-out' }),
      }),
    [client, issuer],
  );

  const loadMe = useCallback(async () => {
    try {
      setStatus({ state: 'ready', me: await api.me() });
    } catch (error) {
      const status = (error as { status?: number }).status;
      if (status === 401) setStatus({ state: 'signed-out' });
      else if (status === 403 || status === 404) setStatus({ state: 'no-access' });
      else setStatus({ state: 'failed', error });
    }
  }, [api]);

  useEffect(
    () =>
      client.onAuthStateChange(({ type, claims }) => {
        if (!claims) setStatus({ state: 'signed-out' });
        else if (type === 'initialSession' || type === 'signedIn') void loadMe();
      }),
    [client, loadMe],
  );

  const signOut = useCallback(async () => {
    await client.logout();
    setStatus({ state: 'signed-out' });
    navigate(pathOf({ name: 'sign-in' }));
  }, [client]);

  const projectKey = projectOf(route);
  useEffect(() => {
    if (projectKey && status.state === 'ready' && status.me.projects.some((p) => p.api_key_id === projectKey))
      localStorage.setItem(LAST_PROJECT, projectKey);
  }, [projectKey, status]);

  // Signed out anywhere but the sign-in page: to the sign-in page, coming back here afterwards.
  useEffect(() => {
    if (status.state === 'signed-out' && route.name !== 'sign-in')
      navigate(withQuery(pathOf({ name: 'sign-in' }), { next: path }), { replace: true });
  }, [status.state, route.name, path]);

  // The home address: the last project opened, else the first one the member may open.
  useEffect(() => {
    if (status.state !== 'ready') return;
    const { me } = status;
    if (route.name === 'sign-in') {
      const next = query.get('next');
      navigate(next?.startsWith(`${BASE}/`) && !next.startsWith(`${BASE}/sign-in`) ? next : `${BASE}/`, {
        replace: true,
      });
    } else if (route.name === 'home') {
      const last = localStorage.getItem(LAST_PROJECT);
      const project = me.projects.find((p) => p.api_key_id === last) ?? me.projects[0];
      if (project) navigate(pathOf({ name: 'overview', project: project.api_key_id }), { replace: true });
      else if (me.operator) navigate(pathOf({ name: 'projects' }), { replace: true });
    }
  }, [status, route.name, query]);

  switch (status.state) {
    case 'loading':
      return (
        <main className="center">
          <Loading />
        </main>
      );
    case 'signed-out':
      return route.name === 'sign-in' ? <SignInPage client={client} /> : null;
    case 'no-access':
      return <NoAccess client={client} signOut={signOut} />;
    case 'failed':
      return (
        <main className="center">
          <h1>{t.appName}</h1>
          <div className="notice error" role="alert">
            <p>{errorText(status.error)}</p>
            <button type="button" onClick={() => void loadMe()}>
              {t.retry}
            </button>
          </div>
        </main>
      );
    case 'ready':
      if (!status.me.operator && status.me.projects.length === 0)
        return <NoAccess client={client} signOut={signOut} />;
      return (
        <ConsoleProvider client={client} api={api} me={status.me} projectKey={projectKey} signOut={signOut}>
          <Shell route={route} query={query} />
        </ConsoleProvider>
      );
  }
}

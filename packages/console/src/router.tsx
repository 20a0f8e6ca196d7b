import { type AnchorHTMLAttributes, type MouseEvent, type ReactNode, useSyncExternalStore } from 'react';

/** Where the server serves the console; every client-side route is below it. */
export const BASE = '/console';

/** Where the last project opened is remembered (its api_key_id only). */
export const LAST_PROJECT = 'tessera-console:project';

/** A page of the console, as its address names it. */
export type Route =
  | { name: 'sign-in' }
  | { name: 'home' }
  | { name: 'account' }
  | { name: 'keys' }
  | { name: 'projects' }
  | { name: 'overview'; project: string }
  | { name: 'users'; project: string }
  | { name: 'user'; project: string; userId: string }
  | { name: 'settings'; project: string }
  | { name: 'clients'; project: string }
  | { name: 'branding'; project: string }
  | { name: 'audit'; project: string }
  | { name: 'webhooks'; project: string }
  | { name: 'webhook'; project: string; webhookId: string }
  | { name: 'not-found' };

/** The pages of one project, as `/console/p/<api_key_id>/<page>` names them. */
const PROJECT_PAGES = ['users', 'settings', 'clients', 'branding', 'audit', 'webhooks'] as const;

/** The route of a path (`/console/p/pk_…/users/u_…`). */
export function parseRoute(pathname: string): Route {
  if (pathname !== BASE && !pathname.startsWith(`${BASE}/`)) return { name: 'not-found' };
  const parts = pathname
    .slice(BASE.length)
    .split('/')
    .filter(Boolean)
    .map((part) => {
      try {
        return decodeURIComponent(part);
      } catch {
        return '';
      }
    });
  const [first, project, page, id, ...rest] = parts;
  if (!first) return { name: 'home' };
  if (parts.length === 1) {
    if (first === 'sign-in' || first === 'account' || first === 'keys' || first === 'projects')
      return { name: first };
    return { name: 'not-found' };
  }
  if (first !== 'p' || !project || rest.length > 0) return { name: 'not-found' };
  if (!page) return id === undefined ? { name: 'overview', project } : { name: 'not-found' };
  if (page === 'users' && id) return { name: 'user', project, userId: id };
  if (page === 'webhooks' && id) return { name: 'webhook', project, webhookId: id };
  if (id === undefined && (PROJECT_PAGES as readonly string[]).includes(page))
    return { name: page as (typeof PROJECT_PAGES)[number], project };
  return { name: 'not-found' };
}

/** The path of a route. */
export function pathOf(route: Route): string {
  const p = (project: string, ...rest: string[]) =>
    [BASE, 'p', project, ...rest].map((s, i) => (i === 0 ? s : encodeURIComponent(s))).join('/');
  switch (route.name) {
    case 'home':
    case 'not-found':
      return `${BASE}/`;
    case 'sign-in':
    case 'account':
    case 'keys':
    case 'projects':
      return `${BASE}/${route.name}`;
    case 'overview':
      return p(route.project);
    case 'user':
      return p(route.project, 'users', route.userId);
    case 'webhook':
      return p(route.project, 'webhooks', route.webhookId);
    default:
      return p(route.project, route.name);
  }
}

// The location as a store React subscribes to: popstate (back, forward) and our own navigations.
const listeners = new Set<() => void>();
const notify = () => {
  for (const listener of listeners) listener();
};
window.addEventListener('popstate', notify);
const subscribe = (listener: () => void) => {
  listeners.add(listener);
  return () => listeners.delete(listener);
};
const snapshot = () => `${location.pathname}${location.search}`;

/** The current path and query, re-rendering on every navigation. */
export function useLocation(): { route: Route; query: URLSearchParams; path: string } {
  const path = useSyncExternalStore(subscribe, snapshot);
  const url = new URL(path, location.origin);
  return { route: parseRoute(url.pathname), query: url.searchParams, path };
}

/** Goes to a path of the console (pushing it on the history, or replacing the current entry). */
export function navigate(to: string, options: { replace?: boolean } = {}): void {
  if (to === snapshot()) return;
  if (options.replace) history.replaceState(null, '', to);
  else history.pushState(null, '', to);
  notify();
}

/** A path with a query (empty values left out). */
export function withQuery(path: string, query: Record<string, string | undefined>): string {
  const search = new URLSearchParams();
  for (const [name, value] of Object.entries(query)) if (value) search.set(name, value);
  const text = search.toString();
  return text ? `${path}?${text}` : path;
}

/**
 * A link inside the console: an ordinary `<a href>` (open in a new tab, copy the address), which a
 * plain click follows without reloading the page.
 */
export function Link(
  props: { to: string; children: ReactNode } & Omit<AnchorHTMLAttributes<HTMLAnchorElement>, 'href'>,
): ReactNode {
  const { to, children, onClick, ...rest } = props;
  const follow = (event: MouseEvent<HTMLAnchorElement>) => {
    onClick?.(event);
    if (
      event.defaultPrevented ||
      event.button !== 0 ||
      event.metaKey ||
      event.ctrlKey ||
      event.shiftKey ||
      event.altKey
    )
      return;
    event.preventDefault();
    navigate(to);
  };
  return (
    <a href={to} onClick={follow} {...rest}>
      {children}
    </a>
  );
}

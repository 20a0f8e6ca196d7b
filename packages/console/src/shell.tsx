import { type ReactNode, useEffect, useId, useState } from 'react';
import { PageTitle } from './components/ui.js';
import { useConsole } from './context.js';
import { fill, t } from './i18n/index.js';
import { AccountPage } from './pages/account.js';
import { AuditPage } from './pages/audit.js';
import { BrandingPage } from './pages/branding.js';
import { ClientsPage } from './pages/clients.js';
import { KeysPage } from './pages/keys.js';
import { OverviewPage } from './pages/overview.js';
import { ProjectsPage } from './pages/projects.js';
import { SettingsPage } from './pages/settings.js';
import { UserPage } from './pages/user.js';
import { UsersPage } from './pages/users.js';
import { WebhookPage } from './pages/webhook.js';
import { WebhooksPage } from './pages/webhooks.js';
import { allows, type Permission } from './permissions.js';
import { LAST_PROJECT, Link, navigate, pathOf, type Route } from './router.js';

/** The pages of a project, in the navigation's order, with what they need. */
const PROJECT_NAV: ReadonlyArray<{
  name: 'overview' | 'users' | 'audit' | 'webhooks' | 'clients' | 'branding' | 'settings';
  label: keyof typeof t;
  needs: Permission;
}> = [
  { name: 'overview', label: 'navOverview', needs: 'users.read' },
  { name: 'users', label: 'navUsers', needs: 'users.read' },
  { name: 'audit', label: 'navAudit', needs: 'users.read' },
  { name: 'webhooks', label: 'navWebhooks', needs: 'users.read' },
  { name: 'clients', label: 'navClients', needs: 'users.read' },
  { name: 'branding', label: 'navBranding', needs: 'users.read' },
  { name: 'settings', label: 'navSettings', needs: 'users.read' },
];

/** The page a route names, when the member may see it. */
function page(route: Route, query: URLSearchParams, can: (p: Permission) => boolean): ReactNode {
  switch (route.name) {
    case 'account':
      return <AccountPage />;
    case 'keys':
      return can('keys.read') ? <KeysPage /> : <NotFound />;
    case 'projects':
      return <ProjectsPage />;
    case 'overview':
      return <OverviewPage />;
    case 'users':
      return <UsersPage query={query.get('q') ?? ''} />;
    case 'user':
      return <UserPage userId={route.userId} />;
    case 'settings':
      return <SettingsPage />;
    case 'clients':
      return <ClientsPage />;
    case 'branding':
      return <BrandingPage />;
    case 'audit':
      return <AuditPage query={query} />;
    case 'webhooks':
      return <WebhooksPage />;
    case 'webhook':
      return <WebhookPage webhookId={route.webhookId} />;
    case 'home':
      // On its way to the last project (app.tsx).
      return null;
    default:
      return <NotFound />;
  }
}

export function NotFound(): ReactNode {
  return (
    <>
      <PageTitle>{t.notFoundTitle}</PageTitle>
      <p>{t.notFoundText}</p>
      <p>
        <Link to={pathOf({ name: 'home' })}>{t.goHome}</Link>
      </p>
    </>
  );
}

/** The member's projects as a small form: pick one, then open it (no navigation on a mere change). */
function ProjectSwitcher(props: { route: Route }): ReactNode {
  const { me, project } = useConsole();
  const id = useId();
  const [chosen, setChosen] = useState(project?.api_key_id ?? '');
  useEffect(() => setChosen(project?.api_key_id ?? ''), [project?.api_key_id]);
  if (me.projects.length < 2 && project) return null;
  if (me.projects.length === 0) return null;
  const open = () => {
    if (!chosen) return;
    // The same page in the other project, unless it shows one thing of the first (a user).
    const name = props.route.name;
    const same = PROJECT_NAV.some((n) => n.name === name);
    navigate(pathOf(same ? ({ name, project: chosen } as Route) : { name: 'overview', project: chosen }));
  };
  return (
    <form
      className="inline-form"
      onSubmit={(event) => {
        event.preventDefault();
        open();
      }}
    >
      <label htmlFor={id} className="sr-only">
        {t.project}
      </label>
      <select id={id} value={chosen} onChange={(event) => setChosen(event.target.value)}>
        {!project && <option value="">{t.chooseProject}</option>}
        {me.projects.map((p) => (
          <option key={p.api_key_id} value={p.api_key_id}>
            {p.name}
          </option>
        ))}
      </select>
      <button type="submit" className="secondary">
        {t.open}
      </button>
    </form>
  );
}

/** The signed-in console: header, navigation, and the page. */
export function Shell(props: { route: Route; query: URLSearchParams }): ReactNode {
  const { route, query } = props;
  const { me, project, can, signOut } = useConsole();
  const [open, setOpen] = useState(false);
  const navId = useId();
  // Each navigation closes the folded menu (at 360 px).
  // biome-ignore lint/correctness/useExhaustiveDependencies: runs on each change of page
  useEffect(() => setOpen(false), [route]);
  const routeProject = 'project' in route ? route.project : undefined;
  // A project the member has no role in is shown exactly as an unknown one.
  const content = routeProject && !project ? <NotFound /> : page(route, query, can);
  const current = (name: string, key?: string) =>
    route.name === name && (key === undefined || routeProject === key) ? 'page' : undefined;
  const role = me.operator ? 'operator' : project?.role;
  // Pages of the service (keys, projects, account) keep the last project's pages in the menu.
  const last = localStorage.getItem(LAST_PROJECT);
  const navProject = project ?? me.projects.find((p) => p.api_key_id === last) ?? me.projects[0];
  return (
    <>
      <a className="skip-link" href="#main">
        {t.skipToContent}
      </a>
      <header className="topbar">
        <Link className="brand" to={pathOf({ name: 'home' })}>
          {t.appName}
        </Link>
        <ProjectSwitcher route={route} />
        <span className="who">
          {me.identifier}
          {role && ` · ${t[`role_${role}`]}`}
        </span>
        <button type="button" className="secondary" onClick={() => void signOut()}>
          {t.signOut}
        </button>
      </header>
      <div className="layout">
        <nav className="sidebar" aria-label={t.navLabel} data-open={String(open)}>
          <button
            type="button"
            className="secondary menu-toggle"
            aria-expanded={open}
            aria-controls={navId}
            onClick={() => setOpen(!open)}
          >
            {t.menu}
          </button>
          <ul id={navId}>
            {navProject && (
              <>
                <li className="group" aria-hidden="true">
                  {navProject.name}
                </li>
                {PROJECT_NAV.filter((item) =>
                  allows(me.operator ? 'operator' : navProject.role, item.needs),
                ).map((item) => (
                  <li key={item.name}>
                    <Link
                      to={pathOf({ name: item.name, project: navProject.api_key_id })}
                      aria-current={
                        current(item.name, navProject.api_key_id) ??
                        (item.name === 'users' && route.name === 'user'
                          ? 'page'
                          : item.name === 'webhooks' && route.name === 'webhook'
                            ? 'page'
                            : undefined)
                      }
                    >
                      {fill(t[item.label] as string, { project: navProject.name })}
                    </Link>
                  </li>
                ))}
              </>
            )}
            <li className="group" aria-hidden="true">
              {t.navService}
            </li>
            <li>
              <Link to={pathOf({ name: 'projects' })} aria-current={current('projects')}>
                {t.navProjects}
              </Link>
            </li>
            {can('keys.read') && (
              <li>
                <Link to={pathOf({ name: 'keys' })} aria-current={current('keys')}>
                  {t.navKeys}
                </Link>
              </li>
            )}
            <li>
              <Link to={pathOf({ name: 'account' })} aria-current={current('account')}>
                {t.navAccount}
              </Link>
            </li>
          </ul>
        </nav>
        <main id="main">{content}</main>
      </div>
    </>
  );
}

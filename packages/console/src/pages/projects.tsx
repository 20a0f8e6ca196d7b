import { type ReactNode, useState } from 'react';
import { SecretOnce } from '../components/secret.js';
import { StackTable } from '../components/table.js';
import { ActionButton, errorText, Field, PageTitle } from '../components/ui.js';
import { useConsole } from '../context.js';
import { fill, t } from '../i18n/index.js';
import { Link, pathOf } from '../router.js';

function NewProject(): ReactNode {
  const { api, notify } = useConsole();
  const [name, setName] = useState('');
  const [origins, setOrigins] = useState('');
  const [error, setError] = useState('');
  const [created, setCreated] = useState<{ name: string; key: string; secret: string } | null>(null);
  const create = async () => {
    setError('');
    if (!name.trim()) return setError(t.projectNameRequired);
    try {
      const project = await api.projects.create({
        name: name.trim(),
        origins: origins
          .split(/[\n,]/)
          .map((o) => o.trim())
          .filter(Boolean),
      });
      setCreated({ name: project.name, key: project.api_key_id, secret: project.api_key_secret });
      setName('');
      setOrigins('');
      notify(fill(t.projectCreated, { name: project.name }));
    } catch (e) {
      setError(errorText(e));
    }
  };
  return (
    <section className="card" aria-labelledby="new-project">
      <h2 id="new-project">{t.newProject}</h2>
      {created && (
        <>
          <SecretOnce
            label={fill(t.apiKeySecretOf, { name: created.name })}
            value={created.secret}
            onDone={() => setCreated(null)}
          />
          <p>{fill(t.reloadForNewProject, { key: created.key })}</p>
        </>
      )}
      <form
        onSubmit={(event) => {
          event.preventDefault();
          void create();
        }}
      >
        <Field label={t.projectName}>
          {({ id }) => (
            <input id={id} value={name} maxLength={100} onChange={(e) => setName(e.target.value)} />
          )}
        </Field>
        <Field label={t.origins} hint={t.originsHint}>
          {({ id, describedBy }) => (
            <textarea
              id={id}
              rows={2}
              value={origins}
              spellCheck={false}
              aria-describedby={describedBy}
              onChange={(e) => setOrigins(e.target.value)}
            />
          )}
        </Field>
        {error && (
          <p className="notice error" role="alert">
            {error}
          </p>
        )}
        <ActionButton action={create}>{t.createProject}</ActionButton>
      </form>
    </section>
  );
}

/** The projects the member may open, with their role in each; operators create projects here. */
export function ProjectsPage(): ReactNode {
  const { me, can } = useConsole();
  return (
    <>
      <PageTitle>{t.projectsTitle}</PageTitle>
      <section className="card" aria-labelledby="project-list">
        <h2 id="project-list">{t.yourProjects}</h2>
        <StackTable
          caption={t.yourProjects}
          empty={<p>{t.noProjects}</p>}
          rows={me.projects}
          rowKey={(p) => p.api_key_id}
          columns={[
            {
              label: t.projectName,
              cell: (p) => <Link to={pathOf({ name: 'overview', project: p.api_key_id })}>{p.name}</Link>,
            },
            { label: t.apiKeyId, className: 'mono', cell: (p) => p.api_key_id },
            { label: t.role, cell: (p) => t[`role_${me.operator ? 'operator' : p.role}`] },
          ]}
        />
      </section>
      {can('projects.create') && <NewProject />}
    </>
  );
}

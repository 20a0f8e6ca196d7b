import { type ReactNode, useState } from 'react';
import type { Project } from '../api/types.js';
import { ConfirmButton } from '../components/confirm.js';
import { SecretOnce } from '../components/secret.js';
import { ActionButton, errorText, Field, Loaded, PageTitle, Time, useResource } from '../components/ui.js';
import { useConsole, useProject } from '../context.js';
import { fill, t } from '../i18n/index.js';

/** A list of values (origins, countries): one a line or separated by commas. */
const list = (text: string): string[] =>
  text
    .split(/[\n,]/)
    .map((item) => item.trim())
    .filter(Boolean);

/** A list of SMS countries as people read it (`*`: all; none). */
const countryList = (countries: readonly string[]): string =>
  countries.includes('*') ? t.allCountries : countries.length === 0 ? t.noCountries : countries.join(', ');

const LIFETIMES = [
  ['access_token_ttl', 'accessTokenTtl'],
  ['id_token_ttl', 'idTokenTtl'],
  ['refresh_token_ttl', 'refreshTokenTtl'],
] as const;

function SettingsForm(props: { project: Project; saved(project: Project): void }): ReactNode {
  const { api, can, notify } = useConsole();
  const { project } = props;
  const editable = can('project.write');
  const { server } = project;
  const [form, setForm] = useState({
    name: project.name,
    origins: project.origins.join('\n'),
    rp_id: project.rp_id ?? '',
    sms_follow_server: project.sms_countries === null,
    sms_countries: (project.sms_countries ?? server.sms_countries).join(', '),
    device_requires_pin: project.device_requires_pin,
    numeric_auth_time: project.numeric_auth_time,
    open_registration: project.open_registration,
    access_token_ttl: String(project.access_token_ttl ?? ''),
    id_token_ttl: String(project.id_token_ttl ?? ''),
    refresh_token_ttl: String(project.refresh_token_ttl ?? ''),
  });
  const [error, setError] = useState('');
  const text = (name: keyof typeof form) => (event: { target: { value: string } }) =>
    setForm((f) => ({ ...f, [name]: event.target.value }));
  const check = (name: keyof typeof form) => (event: { target: { checked: boolean } }) =>
    setForm((f) => ({ ...f, [name]: event.target.checked }));
  const save = async () => {
    setError('');
    const changes: Record<string, unknown> = {
      name: form.name.trim(),
      origins: list(form.origins),
      device_requires_pin: form.device_requires_pin,
      numeric_auth_time: form.numeric_auth_time,
      open_registration: form.open_registration,
    };
    if (form.rp_id.trim()) changes.rp_id = form.rp_id.trim();
    changes.sms_countries = form.sms_follow_server
      ? null
      : list(form.sms_countries).map((c) => c.toUpperCase());
    for (const [name] of LIFETIMES) {
      const value = form[name].trim();
      if (value && !/^\d+$/.test(value)) return setError(t.lifetimeInvalid);
      changes[name] = value ? Number(value) : null;
    }
    try {
      props.saved(await api.projects.update(project.api_key_id, changes));
      notify(t.settingsSaved);
    } catch (e) {
      setError(errorText(e));
    }
  };
  return (
    <form
      className="card"
      aria-labelledby="settings-form"
      onSubmit={(event) => {
        event.preventDefault();
        void save();
      }}
    >
      <h2 id="settings-form">{t.settingsForm}</h2>
      <fieldset className="bare" disabled={!editable}>
        <legend className="sr-only">{t.settingsForm}</legend>
        <Field label={t.projectName}>
          {({ id }) => <input id={id} value={form.name} maxLength={100} onChange={text('name')} />}
        </Field>
        <Field label={t.origins} hint={t.originsHint}>
          {({ id, describedBy }) => (
            <textarea
              id={id}
              rows={4}
              value={form.origins}
              spellCheck={false}
              aria-describedby={describedBy}
              onChange={text('origins')}
            />
          )}
        </Field>
        <Field label={t.rpId} hint={t.rpIdHint}>
          {({ id, describedBy }) => (
            <input
              id={id}
              value={form.rp_id}
              spellCheck={false}
              aria-describedby={describedBy}
              onChange={text('rp_id')}
            />
          )}
        </Field>
        <fieldset>
          <legend>{t.smsCountries}</legend>
          {!server.sms_enabled && <p className="muted">{t.smsOff}</p>}
          <label className="check">
            <input type="checkbox" checked={form.sms_follow_server} onChange={check('sms_follow_server')} />
            {fill(t.smsFollowServer, { countries: countryList(server.sms_countries) })}
          </label>
          <Field label={t.smsCountries} hint={t.smsCountriesHint}>
            {({ id, describedBy }) => (
              <input
                id={id}
                value={form.sms_countries}
                spellCheck={false}
                disabled={form.sms_follow_server}
                aria-describedby={describedBy}
                onChange={text('sms_countries')}
              />
            )}
          </Field>
        </fieldset>
        <fieldset>
          <legend>{t.policies}</legend>
          <label className="check">
            <input
              type="checkbox"
              checked={form.device_requires_pin}
              onChange={check('device_requires_pin')}
            />
            {t.deviceRequiresPin}
          </label>
          <label className="check">
            <input type="checkbox" checked={form.numeric_auth_time} onChange={check('numeric_auth_time')} />
            {t.numericAuthTime}
          </label>
          <label className="check">
            <input type="checkbox" checked={form.open_registration} onChange={check('open_registration')} />
            {t.openRegistration}
          </label>
        </fieldset>
        <fieldset>
          <legend>{t.tokenLifetimes}</legend>
          <p className="muted">{t.tokenLifetimesHint}</p>
          {LIFETIMES.map(([name, label]) => (
            <Field key={name} label={t[label]} hint={fill(t.lifetimeHint, { seconds: server[name] })}>
              {({ id, describedBy }) => (
                <input
                  id={id}
                  inputMode="numeric"
                  value={form[name]}
                  aria-describedby={describedBy}
                  onChange={text(name)}
                  placeholder={String(server[name])}
                />
              )}
            </Field>
          ))}
        </fieldset>
      </fieldset>
      {error && (
        <p className="notice error" role="alert">
          {error}
        </p>
      )}
      {editable && <ActionButton action={save}>{t.saveSettings}</ActionButton>}
    </form>
  );
}

/** A project's settings: name, origins, passkeys' relying party, SMS countries, policies, lifetimes. */
export function SettingsPage(): ReactNode {
  const { api, can, notify } = useConsole();
  const key = useProject();
  const project = useResource(() => api.projects.get(key), [api, key]);
  const [secret, setSecret] = useState<string | null>(null);
  const [version, setVersion] = useState(0);
  return (
    <>
      <PageTitle>{t.settingsTitle}</PageTitle>
      {secret && <SecretOnce label={t.apiKeySecret} value={secret} onDone={() => setSecret(null)} />}
      <Loaded resource={project}>
        {(p: Project) => (
          <>
            <section className="card" aria-labelledby="settings-keys">
              <h2 id="settings-keys">{t.apiKey}</h2>
              <dl className="facts">
                <dt>{t.apiKeyId}</dt>
                <dd className="mono">{p.api_key_id}</dd>
                <dt>{t.created}</dt>
                <dd>
                  <Time at={p.created_at} />
                </dd>
                <dt>{t.secretRotated}</dt>
                <dd>
                  <Time at={p.secret_rotated_at} />
                </dd>
              </dl>
              {can('project.secret.rotate') && (
                <div className="actions">
                  <ConfirmButton
                    title={t.rotateSecretTitle}
                    text={<p>{fill(t.rotateSecretText, { name: p.name })}</p>}
                    confirm={t.rotateSecret}
                    action={async () => {
                      const rotated = await api.projects.rotateSecret(p.api_key_id);
                      setSecret(rotated.api_key_secret);
                      notify(t.secretRotatedNotice);
                      project.reload();
                    }}
                  >
                    {t.rotateSecret}
                  </ConfirmButton>
                </div>
              )}
            </section>
            <SettingsForm
              key={`${p.api_key_id}-${version}`}
              project={p}
              // The form starts again from what the service saved (not from the page's older copy).
              saved={(updated) => {
                project.replace(updated);
                setVersion((v) => v + 1);
              }}
            />
          </>
        )}
      </Loaded>
    </>
  );
}

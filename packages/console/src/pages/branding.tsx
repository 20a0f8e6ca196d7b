import { createTesseraClient, memoryKeyStore, memoryStorage } from '@tessera/client';
import type { Branding as SignInBranding, TesseraSignIn } from '@tessera/ui';
import { createElement, type ReactNode, useEffect, useId, useMemo, useRef, useState } from 'react';
import type { Branding, Project } from '../api/types.js';
import { ActionButton, errorText, Field, Loaded, PageTitle, useResource } from '../components/ui.js';
import { useConsole, useProject } from '../context.js';
import { fill, locale, t } from '../i18n/index.js';
import { TemplatesEditor } from './templates.js';

const COLOR = /^#[0-9a-fA-F]{6}$/;

/** The sign-in options of a project, as its public branding endpoint gives them to the element. */
async function signInOptions(project: string): Promise<Partial<SignInBranding>> {
  try {
    const response = await fetch(`/v1/projects/${encodeURIComponent(project)}/branding`, {
      credentials: 'omit',
    });
    return response.ok ? ((await response.json()) as Partial<SignInBranding>) : {};
  } catch {
    return {};
  }
}

/**
 * The sign-in element with the draft branding, as the project's users would see it. It cannot act:
 * its client reaches nowhere and the preview is inert (no focus, no clicks).
 */
function Preview(props: {
  branding: Partial<SignInBranding>;
  theme: 'light' | 'dark';
  project: string;
}): ReactNode {
  const ref = useRef<TesseraSignIn | null>(null);
  const client = useMemo(
    () =>
      createTesseraClient({
        issuer: location.origin,
        apiKeyId: props.project,
        storage: memoryStorage(),
        keyStore: memoryKeyStore(),
        channel: null,
        fetch: () => Promise.reject(new TypeError('preview only')),
      }),
    [props.project],
  );
  useEffect(() => {
    const element = ref.current;
    if (!element) return;
    element.branding = props.branding;
    element.client = client;
  }, [props.branding, client]);
  return (
    <div className="preview" data-theme={props.theme} inert>
      {createElement('tessera-sign-in', {
        ref,
        theme: props.theme,
        autofill: 'off',
        offers: 'none',
        storage: 'memory',
        locale,
      })}
    </div>
  );
}

function ColorField(props: {
  label: string;
  value: string;
  onChange(value: string): void;
  error?: string;
}): ReactNode {
  return (
    <Field label={props.label} hint={t.colorHint} error={props.error}>
      {({ id, describedBy, invalid }) => (
        <div className="color-row">
          <input
            id={id}
            value={props.value}
            placeholder="#0a5cc2"
            spellCheck={false}
            aria-describedby={describedBy}
            aria-invalid={invalid || undefined}
            onChange={(event) => props.onChange(event.target.value)}
          />
          <input
            type="color"
            aria-label={fill(t.pickColor, { what: props.label })}
            value={COLOR.test(props.value) ? props.value : '#000000'}
            onChange={(event) => props.onChange(event.target.value)}
          />
        </div>
      )}
    </Field>
  );
}

function BrandingEditor(props: { project: Project; options: Partial<SignInBranding> }): ReactNode {
  const { api, can, notify } = useConsole();
  const key = props.project.api_key_id;
  const editable = can('project.write');
  const start = props.project.branding ?? {};
  const [draft, setDraft] = useState({
    display_name: start.display_name ?? '',
    logo_url: start.logo_url ?? '',
    primary_color: start.primary_color ?? '',
    primary_color_dark: start.primary_color_dark ?? '',
  });
  const [theme, setTheme] = useState<'light' | 'dark'>('light');
  const [error, setError] = useState('');
  const themeName = useId();
  const bad = (value: string) => (value && !COLOR.test(value) ? t.colorInvalid : undefined);
  const preview = useMemo<Partial<SignInBranding>>(
    () => ({
      ...props.options,
      name: draft.display_name || props.project.name,
      logo_url: draft.logo_url || null,
      primary_color: COLOR.test(draft.primary_color) ? draft.primary_color : null,
      primary_color_dark: COLOR.test(draft.primary_color_dark) ? draft.primary_color_dark : null,
    }),
    [draft, props.options, props.project.name],
  );
  const save = async () => {
    setError('');
    if (bad(draft.primary_color) || bad(draft.primary_color_dark)) return setError(t.colorInvalid);
    const body: Branding = Object.fromEntries(
      Object.entries(draft)
        .map(([name, value]) => [name, value.trim()])
        .filter(([, value]) => value),
    );
    try {
      await api.branding.set(key, body);
      notify(t.brandingSaved);
    } catch (e) {
      setError(errorText(e));
    }
  };
  const set = (name: keyof typeof draft) => (value: string) => setDraft((d) => ({ ...d, [name]: value }));
  return (
    <div className="grid">
      <section className="card" aria-labelledby="branding-form">
        <h2 id="branding-form">{t.brandingForm}</h2>
        <form
          onSubmit={(event) => {
            event.preventDefault();
            void save();
          }}
        >
          <fieldset className="bare" disabled={!editable}>
            <legend className="sr-only">{t.brandingForm}</legend>
            <Field label={t.displayName} hint={fill(t.displayNameHint, { name: props.project.name })}>
              {({ id, describedBy }) => (
                <input
                  id={id}
                  value={draft.display_name}
                  maxLength={100}
                  aria-describedby={describedBy}
                  onChange={(event) => set('display_name')(event.target.value)}
                />
              )}
            </Field>
            <Field label={t.logoUrl} hint={t.logoUrlHint}>
              {({ id, describedBy }) => (
                <input
                  id={id}
                  type="url"
                  value={draft.logo_url}
                  aria-describedby={describedBy}
                  onChange={(event) => set('logo_url')(event.target.value)}
                />
              )}
            </Field>
            <ColorField
              label={t.primaryColor}
              value={draft.primary_color}
              onChange={set('primary_color')}
              error={bad(draft.primary_color)}
            />
            <ColorField
              label={t.primaryColorDark}
              value={draft.primary_color_dark}
              onChange={set('primary_color_dark')}
              error={bad(draft.primary_color_dark)}
            />
          </fieldset>
          {error && (
            <p className="notice error" role="alert">
              {error}
            </p>
          )}
          {editable && <ActionButton action={save}>{t.saveBranding}</ActionButton>}
        </form>
      </section>
      <section className="card" aria-labelledby="branding-preview">
        <h2 id="branding-preview">{t.preview}</h2>
        <fieldset>
          <legend>{t.previewTheme}</legend>
          {(['light', 'dark'] as const).map((value) => (
            <label className="check" key={value}>
              <input
                type="radio"
                name={themeName}
                checked={theme === value}
                onChange={() => setTheme(value)}
              />
              {value === 'light' ? t.themeLight : t.themeDark}
            </label>
          ))}
        </fieldset>
        <p className="muted">{t.previewText}</p>
        <Preview branding={preview} theme={theme} project={key} />
      </section>
    </div>
  );
}

/** The project's sign-in branding with a live preview, and its message texts in each language. */
export function BrandingPage(): ReactNode {
  const { api } = useConsole();
  const key = useProject();
  const data = useResource(
    async () => ({ project: await api.projects.get(key), options: await signInOptions(key) }),
    [api, key],
  );
  return (
    <>
      <PageTitle>{t.brandingTitle}</PageTitle>
      <Loaded resource={data}>
        {({ project, options }) => (
          <>
            <BrandingEditor project={project} options={options} />
            <TemplatesEditor project={project} reload={data.reload} />
          </>
        )}
      </Loaded>
    </>
  );
}

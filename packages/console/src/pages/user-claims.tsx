import { type ReactNode, useEffect, useRef, useState } from 'react';
import { parseClaims } from '../claims.js';
import { ActionButton, errorText, Field, Loaded, useResource } from '../components/ui.js';
import { useConsole, useProject } from '../context.js';
import { t } from '../i18n/index.js';

/** A user's custom claims: a JSON editor checked as the service checks (admin and up), else shown. */
export function ClaimsEditor(props: { userId: string }): ReactNode {
  const { api, can, notify } = useConsole();
  const project = useProject();
  const claims = useResource(() => api.users.claims(project, props.userId), [api, project, props.userId]);
  const [text, setText] = useState('');
  const [error, setError] = useState('');
  const editor = useRef<HTMLTextAreaElement>(null);
  useEffect(() => {
    if (claims.data) setText(JSON.stringify(claims.data.claims, null, 2));
  }, [claims.data]);
  const editable = can('claims.write');
  const save = async () => {
    const parsed = parseClaims(text);
    if ('error' in parsed) {
      setError(parsed.error);
      editor.current?.focus();
      return;
    }
    setError('');
    try {
      const saved = await api.users.setClaims(project, props.userId, parsed.claims);
      setText(JSON.stringify(saved.claims, null, 2));
      notify(t.claimsSaved);
    } catch (e) {
      setError(errorText(e));
    }
  };
  return (
    <section className="card" aria-labelledby="user-claims">
      <h2 id="user-claims">{t.customClaims}</h2>
      <Loaded resource={claims}>
        {() =>
          editable ? (
            <form
              onSubmit={(event) => {
                event.preventDefault();
                void save();
              }}
            >
              <Field label={t.claimsJson} hint={t.claimsHint} error={error || undefined}>
                {({ id, describedBy, invalid }) => (
                  <textarea
                    id={id}
                    name="claims"
                    value={text}
                    spellCheck={false}
                    rows={8}
                    aria-describedby={describedBy}
                    aria-invalid={invalid || undefined}
                    onChange={(event) => setText(event.target.value)}
                    ref={editor}
                  />
                )}
              </Field>
              <ActionButton action={save}>{t.saveClaims}</ActionButton>
            </form>
          ) : (
            <pre className="code">{text}</pre>
          )
        }
      </Loaded>
    </section>
  );
}

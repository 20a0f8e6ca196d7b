import { type ReactNode, useId, useState } from 'react';
import type { MessageTemplates, Project, TemplateField } from '../api/types.js';
import { ActionButton, errorText, Field } from '../components/ui.js';
import { useConsole } from '../context.js';
import { fill, t } from '../i18n/index.js';
import { LOCALE_TAG, sample, TEMPLATE_FIELDS, templateProblem } from '../templates.js';

/** The e-mail and SMS texts of one-time codes, per language, checked before saving (admin and up). */
export function TemplatesEditor(props: { project: Project; reload(): void }): ReactNode {
  const { api, can, notify } = useConsole();
  const editable = can('project.write');
  const saved: MessageTemplates = props.project.message_templates ?? { locales: {} };
  const [templates, setTemplates] = useState<MessageTemplates>(saved);
  const languages = [...new Set(['en', 'fr', 'de', ...Object.keys(templates.locales)])];
  const [language, setLanguage] = useState('en');
  const [newLanguage, setNewLanguage] = useState('');
  const [error, setError] = useState('');
  const languageId = useId();
  const texts = templates.locales[language] ?? {};
  const problems = Object.fromEntries(
    TEMPLATE_FIELDS.map((field) => [field, templateProblem(field, texts[field] ?? '')]),
  ) as Record<TemplateField, string | undefined>;
  const setText = (field: TemplateField, value: string) =>
    setTemplates((all) => {
      const locale = { ...all.locales[language] };
      if (value) locale[field] = value;
      else delete locale[field];
      const locales = { ...all.locales, [language]: locale };
      if (Object.keys(locale).length === 0) delete locales[language];
      return { ...all, locales };
    });
  const save = async () => {
    setError('');
    const wrong = Object.entries(templates.locales).find(([, fields]) =>
      TEMPLATE_FIELDS.some((field) => templateProblem(field, fields[field] ?? '')),
    );
    if (wrong) {
      setLanguage(wrong[0]);
      return setError(fill(t.templatesInvalid, { language: wrong[0] }));
    }
    try {
      await api.projects.update(props.project.api_key_id, {
        message_templates: Object.keys(templates.locales).length || templates.brand ? templates : null,
      });
      notify(t.templatesSaved);
      props.reload();
    } catch (e) {
      setError(errorText(e));
    }
  };
  const labels: Record<TemplateField, string> = {
    email_subject: t.emailSubject,
    email_text: t.emailText,
    email_html: t.emailHtml,
    sms_text: t.smsText,
  };
  const brand = templates.brand || props.project.branding?.display_name || props.project.name;
  return (
    <section className="card" aria-labelledby="templates">
      <h2 id="templates">{t.templatesTitle}</h2>
      <p className="muted">
        {fill(t.templatesText, {
          placeholders: '{{code}}, {{lifetime}}, {{minutes}}, {{brand}}, {{project}}',
        })}
      </p>
      <div className="inline-form">
        <div className="field">
          <label htmlFor={languageId}>{t.language}</label>
          <select id={languageId} value={language} onChange={(event) => setLanguage(event.target.value)}>
            {languages.map((tag) => (
              <option key={tag} value={tag}>
                {tag}
                {templates.locales[tag] ? ` (${t.customised})` : ''}
              </option>
            ))}
          </select>
        </div>
        {editable && (
          <form
            className="inline-form"
            onSubmit={(event) => {
              event.preventDefault();
              const tag = newLanguage.trim().toLowerCase();
              if (!LOCALE_TAG.test(tag)) return setError(t.languageInvalid);
              setError('');
              setLanguage(tag);
              setNewLanguage('');
            }}
          >
            <Field label={t.addLanguage} hint={t.addLanguageHint}>
              {({ id, describedBy }) => (
                <input
                  id={id}
                  value={newLanguage}
                  size={8}
                  aria-describedby={describedBy}
                  onChange={(event) => setNewLanguage(event.target.value)}
                />
              )}
            </Field>
            <button type="submit" className="secondary">
              {t.add}
            </button>
          </form>
        )}
      </div>
      <form
        onSubmit={(event) => {
          event.preventDefault();
          void save();
        }}
      >
        <fieldset disabled={!editable}>
          <legend>{fill(t.textsIn, { language })}</legend>
          {TEMPLATE_FIELDS.map((field) => (
            <Field
              key={`${language}-${field}`}
              label={labels[field]}
              hint={t.templateEmptyHint}
              error={problems[field]}
            >
              {({ id, describedBy, invalid }) =>
                field === 'email_subject' ? (
                  <input
                    id={id}
                    value={texts[field] ?? ''}
                    aria-describedby={describedBy}
                    aria-invalid={invalid || undefined}
                    onChange={(event) => setText(field, event.target.value)}
                  />
                ) : (
                  <textarea
                    id={id}
                    value={texts[field] ?? ''}
                    rows={field === 'sms_text' ? 3 : 5}
                    aria-describedby={describedBy}
                    aria-invalid={invalid || undefined}
                    onChange={(event) => setText(field, event.target.value)}
                  />
                )
              }
            </Field>
          ))}
        </fieldset>
        {(texts.sms_text || texts.email_subject) && (
          <div className="notice">
            <h3>{t.samplePreview}</h3>
            {texts.email_subject && <p>{sample(texts.email_subject, brand)}</p>}
            {texts.sms_text && <p>{sample(texts.sms_text, brand)}</p>}
          </div>
        )}
        {error && (
          <p className="notice error" role="alert">
            {error}
          </p>
        )}
        {editable && <ActionButton action={save}>{t.saveTemplates}</ActionButton>}
      </form>
    </section>
  );
}

import { type ReactNode, useEffect, useRef, useState } from 'react';
import { t } from '../i18n/index.js';

/**
 * A secret the service shows once (a client secret, a webhook's signing secret, an API key
 * secret): shown until dismissed, with a copy button. Nothing keeps it: leaving the page forgets it.
 */
export function SecretOnce(props: { label: string; value: string; onDone(): void }): ReactNode {
  const [copied, setCopied] = useState(false);
  const box = useRef<HTMLElement>(null);
  useEffect(() => {
    box.current?.focus();
  }, []);
  const copy = async () => {
    try {
      await navigator.clipboard.writeText(props.value);
      setCopied(true);
    } catch {
      setCopied(false);
    }
  };
  return (
    <section className="secret" ref={box} tabIndex={-1} aria-label={props.label}>
      <h2>{props.label}</h2>
      <p>{t.secretOnce}</p>
      <output className="mono" data-secret="">
        {props.value}
      </output>
      <p className="sr-only" aria-live="polite">
        {copied ? t.copied : ''}
      </p>
      <div className="actions">
        <button type="button" className="secondary" onClick={() => void copy()}>
          {copied ? t.copied : t.copy}
        </button>
        <button type="button" onClick={props.onDone}>
          {t.secretSaved}
        </button>
      </div>
    </section>
  );
}

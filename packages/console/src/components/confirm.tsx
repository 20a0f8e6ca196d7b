import { type ReactNode, useId, useRef, useState } from 'react';
import { fill, t } from '../i18n/index.js';
import { errorText } from './ui.js';

/**
 * A button whose action is confirmed in a modal dialog first (the browser's `<dialog>`: focus stays
 * inside, Escape cancels, focus returns to the button). With `typed`, the action waits until that
 * text is typed (deleting a user: their identifier).
 */
export function ConfirmButton(props: {
  children: ReactNode;
  title: string;
  text: ReactNode;
  confirm: string;
  typed?: string;
  variant?: 'primary' | 'secondary' | 'danger';
  /** Runs the action; a failure is shown in the dialog, which stays open. */
  action: () => Promise<unknown>;
  'aria-label'?: string;
}): ReactNode {
  const dialog = useRef<HTMLDialogElement>(null);
  const trigger = useRef<HTMLButtonElement>(null);
  const id = useId();
  const [typed, setTyped] = useState('');
  const [error, setError] = useState('');
  const [busy, setBusy] = useState(false);
  const open = () => {
    setTyped('');
    setError('');
    dialog.current?.showModal();
  };
  const close = () => {
    dialog.current?.close();
    trigger.current?.focus();
  };
  const ready = props.typed === undefined || typed.trim() === props.typed;
  const run = async () => {
    if (!ready || busy) return;
    setBusy(true);
    setError('');
    try {
      await props.action();
      dialog.current?.close();
    } catch (e) {
      setError(errorText(e));
    } finally {
      setBusy(false);
    }
  };
  const variant = props.variant ?? 'danger';
  return (
    <>
      <button
        ref={trigger}
        type="button"
        className={variant === 'primary' ? undefined : variant}
        onClick={open}
        aria-label={props['aria-label']}
        aria-haspopup="dialog"
      >
        {props.children}
      </button>
      <dialog
        ref={dialog}
        aria-labelledby={`${id}-title`}
        aria-describedby={`${id}-text`}
        onClose={() => trigger.current?.focus()}
      >
        <form
          method="dialog"
          onSubmit={(event) => {
            event.preventDefault();
            void run();
          }}
        >
          <h2 id={`${id}-title`}>{props.title}</h2>
          <div id={`${id}-text`}>{props.text}</div>
          {props.typed !== undefined && (
            <div className="field">
              <label htmlFor={`${id}-typed`}>{fill(t.typeToConfirm, { text: props.typed })}</label>
              <input
                id={`${id}-typed`}
                value={typed}
                autoComplete="off"
                spellCheck={false}
                onChange={(event) => setTyped(event.target.value)}
              />
            </div>
          )}
          {error && (
            <p className="notice error" role="alert">
              {error}
            </p>
          )}
          <div className="actions">
            <button type="submit" className={variant === 'primary' ? undefined : variant} disabled={!ready}>
              {busy ? t.working : props.confirm}
            </button>
            <button type="button" className="secondary" onClick={close}>
              {t.cancel}
            </button>
          </div>
        </form>
      </dialog>
    </>
  );
}

/**
 * "Remove" for one thing of a list (a device, a passkey), named for screen readers ("Remove Ada’s
 * phone") and confirmed in a dialog saying what removing `name` means.
 */
export function RemoveButton(props: {
  name: string;
  title: string;
  text: string;
  action: () => Promise<unknown>;
}): ReactNode {
  return (
    <ConfirmButton
      title={props.title}
      text={<p>{props.text}</p>}
      confirm={t.remove}
      aria-label={fill(t.removeNamed, { name: props.name })}
      action={props.action}
    >
      {t.remove}
    </ConfirmButton>
  );
}

import { isTesseraAdminError } from '@tessera/admin';
import {
  type ButtonHTMLAttributes,
  type ReactNode,
  useCallback,
  useEffect,
  useId,
  useRef,
  useState,
} from 'react';
import { ApiError } from '../api/http.js';
import { fill, t, when } from '../i18n/index.js';

/** A button that shows it is working while its action runs, and cannot be pressed twice meanwhile. */
export function ActionButton(
  props: {
    action: () => Promise<unknown> | unknown;
    children: ReactNode;
    variant?: 'primary' | 'secondary' | 'danger';
  } & Omit<ButtonHTMLAttributes<HTMLButtonElement>, 'onClick'>,
): ReactNode {
  const { action, children, variant = 'primary', className, ...rest } = props;
  const [busy, setBusy] = useState(false);
  const run = async () => {
    if (busy) return;
    setBusy(true);
    try {
      await action();
    } finally {
      setBusy(false);
    }
  };
  return (
    <button
      type="button"
      className={[variant === 'primary' ? '' : variant, className].filter(Boolean).join(' ') || undefined}
      aria-disabled={busy || undefined}
      onClick={() => void run()}
      {...rest}
    >
      {busy ? t.working : children}
    </button>
  );
}

/** A labelled control with its hint and error, tied to it for screen readers. */
export function Field(props: {
  label: ReactNode;
  hint?: ReactNode;
  error?: string | undefined;
  children: (ids: { id: string; describedBy: string | undefined; invalid: boolean }) => ReactNode;
}): ReactNode {
  const id = useId();
  const hintId = props.hint ? `${id}-hint` : undefined;
  const errorId = props.error ? `${id}-error` : undefined;
  const describedBy = [hintId, errorId].filter(Boolean).join(' ') || undefined;
  return (
    <div className="field">
      <label htmlFor={id}>{props.label}</label>
      {props.hint && (
        <p className="hint" id={hintId}>
          {props.hint}
        </p>
      )}
      {props.children({ id, describedBy, invalid: Boolean(props.error) })}
      {props.error && (
        <p className="error" id={errorId}>
          {props.error}
        </p>
      )}
    </div>
  );
}

/** A date and time (or "never"), machine-readable too. */
export function Time(props: { at: string | null | undefined }): ReactNode {
  return props.at ? (
    <time dateTime={props.at}>{when(props.at)}</time>
  ) : (
    <span className="muted">{t.never}</span>
  );
}

export function Badge(props: { tone: 'ok' | 'bad' | 'warn'; children: ReactNode }): ReactNode {
  return <span className={`badge ${props.tone}`}>{props.children}</span>;
}

export function Loading(): ReactNode {
  return (
    <p className="muted" role="status">
      {t.loading}
    </p>
  );
}

/** What a failed call means for the person at the console, with the service's detail. */
export function errorText(error: unknown): string {
  if (!(error instanceof ApiError || isTesseraAdminError(error))) return t.errGeneric;
  switch (error.code) {
    case 'timeout':
    case 'network_error':
      return t.errNetwork;
    case 'forbidden':
      return error.detail ? fill(t.errForbiddenDetail, { detail: error.detail }) : t.errForbidden;
    case 'not_found':
      return t.errNotFound;
    case 'rate_limited':
      return t.errRate;
    case 'unauthorized':
      return t.errSession;
  }
  if ((error.status ?? 0) >= 500) return t.errServer;
  return error.detail || t.errGeneric;
}

/** A failure shown where it happened (announced to screen readers). */
export function ErrorNotice(props: { error: unknown; retry?: () => void }): ReactNode {
  return (
    <div className="notice error" role="alert">
      <p>{errorText(props.error)}</p>
      {props.retry && (
        <button type="button" className="secondary" onClick={props.retry}>
          {t.retry}
        </button>
      )}
    </div>
  );
}

/** The state of a load: its data, its failure, and a way to load again. */
export interface Resource<T> {
  data: T | undefined;
  error: unknown;
  loading: boolean;
  reload(): void;
  /** Shows `data` (what a write answered) at once, without loading again. */
  replace(data: T): void;
}

/** Loads `load()` when `key` changes; a reload keeps the data shown until the new data arrives. */
export function useResource<T>(
  load: (signal: AbortSignal) => Promise<T>,
  key: readonly unknown[],
): Resource<T> {
  const [state, setState] = useState<{ data?: T; error?: unknown; loading: boolean }>({ loading: true });
  const [generation, setGeneration] = useState(0);
  const loader = useRef(load);
  loader.current = load;
  // biome-ignore lint/correctness/useExhaustiveDependencies: `key` lists what the load depends on
  useEffect(() => {
    const controller = new AbortController();
    setState((s) => ({ ...s, loading: true }));
    loader.current(controller.signal).then(
      (data) => {
        if (!controller.signal.aborted) setState({ data, loading: false });
      },
      (error: unknown) => {
        if (!controller.signal.aborted) setState({ error, loading: false });
      },
    );
    return () => controller.abort();
  }, [...key, generation]);
  const reload = useCallback(() => setGeneration((g) => g + 1), []);
  const replace = useCallback((data: T) => setState({ data, loading: false }), []);
  return { data: state.data, error: state.error, loading: state.loading, reload, replace };
}

/** Renders a resource: loading, its failure (with retry), or its data. */
export function Loaded<T>(props: { resource: Resource<T>; children: (data: T) => ReactNode }): ReactNode {
  const { data, error, loading, reload } = props.resource;
  if (error) return <ErrorNotice error={error} retry={reload} />;
  if (data === undefined) return loading ? <Loading /> : null;
  return props.children(data);
}

/** A page's heading, focused when the page opens (so keyboard and screen-reader users land on it). */
export function PageTitle(props: { children: string; actions?: ReactNode }): ReactNode {
  const ref = useRef<HTMLHeadingElement>(null);
  useEffect(() => {
    document.title = fill(t.documentTitle, { page: props.children });
    ref.current?.focus({ preventScroll: false });
  }, [props.children]);
  return (
    <div className="page-head">
      <h1 ref={ref} tabIndex={-1}>
        {props.children}
      </h1>
      {props.actions}
    </div>
  );
}

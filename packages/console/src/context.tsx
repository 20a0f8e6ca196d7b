import type { TesseraClient } from '@tessera/client';
import { createContext, type ReactNode, useCallback, useContext, useMemo, useRef, useState } from 'react';
import type { ConsoleApi } from './api/console-api.js';
import type { Me } from './api/types.js';
import { allows, type Permission } from './permissions.js';

/** What every page of a signed-in console has at hand. */
export interface ConsoleState {
  /** The console project's client: the member's session, their passkeys. */
  client: TesseraClient;
  api: ConsoleApi;
  me: Me;
  /** The project shown (from the address), when the member may open it. */
  project: Me['projects'][number] | undefined;
  /** Whether the member's role in the project shown (or as operator) allows it. */
  can(permission: Permission): boolean;
  /** A short message, announced politely and shown for a few seconds. */
  notify(text: string): void;
  signOut(): Promise<void>;
}

const Context = createContext<ConsoleState | null>(null);

export function useConsole(): ConsoleState {
  const state = useContext(Context);
  if (!state) throw new Error('useConsole() outside the signed-in console');
  return state;
}

/** The current project's api_key_id (pages of a project only). */
export function useProject(): string {
  const { project } = useConsole();
  if (!project) throw new Error('useProject() outside a project page');
  return project.api_key_id;
}

export function ConsoleProvider(props: {
  client: TesseraClient;
  api: ConsoleApi;
  me: Me;
  projectKey: string | undefined;
  signOut(): Promise<void>;
  children: ReactNode;
}): ReactNode {
  const { client, api, me, projectKey, signOut } = props;
  const [toasts, setToasts] = useState<Array<{ id: number; text: string }>>([]);
  const next = useRef(0);
  const notify = useCallback((text: string) => {
    const id = ++next.current;
    setToasts((list) => [...list.slice(-2), { id, text }]);
    setTimeout(() => setToasts((list) => list.filter((toast) => toast.id !== id)), 6000);
  }, []);
  const project = me.projects.find((p) => p.api_key_id === projectKey);
  const state = useMemo<ConsoleState>(
    () => ({
      client,
      api,
      me,
      project,
      can: (permission) => allows(me.operator ? 'operator' : project?.role, permission),
      notify,
      signOut,
    }),
    [client, api, me, project, notify, signOut],
  );
  return (
    <Context.Provider value={state}>
      {props.children}
      <div className="toasts" role="status" aria-live="polite">
        {toasts.map((toast) => (
          <p key={toast.id}>{toast.text}</p>
        ))}
      </div>
    </Context.Provider>
  );
}

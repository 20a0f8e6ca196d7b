export const ROOT: string;
export interface Workspace {
  dir: string;
  path: string;
  manifest: { name: string; private?: boolean; [key: string]: unknown };
}
export function workspaces(root?: string): Workspace[];
export function publishable(root?: string): Workspace[];

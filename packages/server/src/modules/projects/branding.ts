import { badRequest } from '../../errors.js';
import { normaliseName, shown } from './project-settings.js';

/**
 * A project's branding on the sign-in UI (`@tessera/ui`, the hosted pages): the name shown, a
 * logo and the colour of its buttons in the light and the dark theme. Every member is optional.
 */
export interface ProjectBranding {
  /** Shown instead of the project's name. */
  display_name?: string;
  /** An https URL (http on localhost, for development) of the logo. */
  logo_url?: string;
  /** `#rrggbb`: the buttons' colour in the light theme (the text on it is black or white, whichever reads). */
  primary_color?: string;
  /** `#rrggbb`: the buttons' colour in the dark theme. */
  primary_color_dark?: string;
}

const MEMBERS = ['display_name', 'logo_url', 'primary_color', 'primary_color_dark'] as const;
const COLOR = /^#[0-9a-fA-F]{6}$/;
/** Longest logo URL, in characters. */
export const MAX_LOGO_URL_LENGTH = 2048;

/**
 * Checks a branding object an operator or integrator sent; each refusal names the member and what
 * is expected. A member given as null is left out (unset). Null or `{}` as a whole: no branding.
 */
export function parseBranding(raw: unknown): ProjectBranding | null {
  if (raw === null) return null;
  if (typeof raw !== 'object' || Array.isArray(raw))
    throw badRequest(
      'branding must be an object such as {"display_name": "Acme", "primary_color": "#1d4ed8"}',
    );
  const given = raw as Record<string, unknown>;
  const unknown = Object.keys(given).find((key) => !(MEMBERS as readonly string[]).includes(key));
  if (unknown !== undefined)
    throw badRequest(`branding has no member ${shown(unknown)}; its members are ${MEMBERS.join(', ')}`);
  const branding: ProjectBranding = {};
  for (const key of MEMBERS) {
    const value = given[key];
    if (value === undefined || value === null) continue;
    if (typeof value !== 'string') throw badRequest(`branding.${key} must be a string or null`);
    branding[key] = check(key, value);
  }
  return Object.keys(branding).length === 0 ? null : branding;
}

function check(key: (typeof MEMBERS)[number], value: string): string {
  if (key === 'display_name') {
    try {
      return normaliseName(value);
    } catch {
      throw badRequest('branding.display_name must be 1 to 100 characters without control characters');
    }
  }
  if (key === 'logo_url') return logoUrl(value);
  if (!COLOR.test(value))
    throw badRequest(`branding.${key} must be a colour as #rrggbb (e.g. #1d4ed8)`);
  return value.toLowerCase();
}

/** An https URL (or http on a loopback host), no user name, at most MAX_LOGO_URL_LENGTH characters. */
function logoUrl(value: string): string {
  const refuse = () =>
    badRequest(
      `branding.logo_url must be an https URL of at most ${MAX_LOGO_URL_LENGTH} characters (http only on localhost)`,
    );
  if (value.length > MAX_LOGO_URL_LENGTH || /[\p{C}\p{Z}]/u.test(value)) throw refuse();
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    throw refuse();
  }
  const loopback = ['localhost', '127.0.0.1', '[::1]'].includes(url.hostname);
  if (url.username || url.password || !(url.protocol === 'https:' || (url.protocol === 'http:' && loopback)))
    throw refuse();
  return url.href;
}

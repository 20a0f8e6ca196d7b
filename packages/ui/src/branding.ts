/**
 * A project's branding and sign-in options, as `GET {issuer}/v1/projects/{api_key_id}/branding`
 * answers (and as a server-rendered page may give them in the `branding` attribute).
 */
export interface Branding {
  /** The name shown at the top (the project's display name, else its name). */
  name: string;
  /** An https URL of the logo, or null. */
  logo_url: string | null;
  /** `#rrggbb` of buttons in the light theme, or null for the default. */
  primary_color: string | null;
  /** `#rrggbb` of buttons in the dark theme, or null for the default. */
  primary_color_dark: string | null;
  /** Whether device sign-in needs the PIN (the element then shows the PIN pad). */
  device_requires_pin: boolean;
  /** Whether passkeys can work (the project has a relying-party id). */
  passkeys: boolean;
  /** Countries SMS codes may go to, with their calling codes; empty: e-mail only. */
  sms_countries: ReadonlyArray<{ country: string; calling_code: string }>;
}

/** What the element shows when the project's branding cannot be read: no name, every method. */
export const NO_BRANDING: Branding = {
  name: '',
  logo_url: null,
  primary_color: null,
  primary_color_dark: null,
  device_requires_pin: false,
  passkeys: true,
  sms_countries: [],
};

/** The branding of a project, or NO_BRANDING when it cannot be read. */
export async function loadBranding(issuer: string, apiKeyId: string): Promise<Branding> {
  try {
    const url = `${issuer.replace(/\/+$/, '')}/v1/projects/${encodeURIComponent(apiKeyId)}/branding`;
    const response = await fetch(url, { credentials: 'omit' });
    return response.ok ? { ...NO_BRANDING, ...((await response.json()) as Partial<Branding>) } : NO_BRANDING;
  } catch {
    return NO_BRANDING;
  }
}

/** Black or white, whichever reads better on `hex` (WCAG relative luminance). */
export function onColor(hex: string): string {
  const channel = (i: number) => {
    const c = Number.parseInt(hex.slice(i, i + 2), 16) / 255;
    return c <= 0.03928 ? c / 12.92 : ((c + 0.055) / 1.055) ** 2.4;
  };
  const l = 0.2126 * channel(1) + 0.7152 * channel(3) + 0.0722 * channel(5);
  return (l + 0.05) / 0.05 > 1.05 / (l + 0.05) ? '#000' : '#fff';
}

/** The branding's colours as the custom properties the styles read (the page's own win). */
export function brandingStyle(branding: Branding): string {
  const hex = /^#[0-9a-f]{6}$/i;
  let css = '';
  for (const [value, suffix] of [
    [branding.primary_color, ''],
    [branding.primary_color_dark, '-dark'],
  ] as const) {
    if (value && hex.test(value))
      css += `--tessera-brand-primary${suffix}:${value};--tessera-brand-on-primary${suffix}:${onColor(value)};`;
  }
  return css && `:host{${css}}`;
}

/**
 * What the user typed as the identifier the service takes: an e-mail address as typed, a phone
 * number in E.164. A number without `+` gets the chosen country's calling code (its leading
 * trunk 0 dropped, except in Italy where it belongs to the number).
 */
export function toIdentifier(typed: string, callingCode: string | undefined): string {
  const value = typed.trim();
  if (value.includes('@') || !/^\+?[\d\s().-]{4,}$/.test(value)) return value;
  const digits = value.replace(/[^\d]/g, '');
  if (value.startsWith('+') || !callingCode) return `+${digits}`;
  if (digits.startsWith('00')) return `+${digits.slice(2)}`;
  return `+${callingCode}${callingCode === '39' ? digits : digits.replace(/^0/, '')}`;
}

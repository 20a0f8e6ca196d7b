/** Reads the environment; the names are listed in KNOWN_VARIABLES (config/index.ts). */
type Env = Record<string, string | undefined>;

/** The SMS provider TESSERA_SMS_PROVIDER names, with its settings (docs/CONFIGURATION.md#sms-providers). */
export type SmsProviderConfig =
  | { kind: 'http' }
  | { kind: 'twilio'; accountSid: string; authToken: string; baseUrl: string | undefined }
  | { kind: 'vonage'; apiKey: string; apiSecret: string; baseUrl: string | undefined }
  | {
      kind: 'sns';
      region: string;
      accessKeyId: string;
      secretAccessKey: string;
      sessionToken: string | undefined;
      endpoint: string | undefined;
    };

const KINDS = ['http', 'twilio', 'vonage', 'sns'] as const;

/**
 * The SMS provider: TESSERA_SMS_PROVIDER, else `http` when TESSERA_SMS_URL is set, else none.
 * Each provider's variables are read only when it is chosen; a missing one is named in `error`.
 */
export function parseSmsProvider(env: Env): SmsProviderConfig | undefined | { error: string } {
  const raw = env.TESSERA_SMS_PROVIDER || (env.TESSERA_SMS_URL ? 'http' : '');
  if (raw === '') return undefined;
  if (!(KINDS as readonly string[]).includes(raw))
    return { error: `TESSERA_SMS_PROVIDER must be ${KINDS.join(', ')}, got "${raw.slice(0, 40)}"` };
  const missing = (names: string[]) => names.filter((name) => !env[name]);
  const need = (names: string[]): { error: string } | undefined => {
    const absent = missing(names);
    return absent.length > 0
      ? { error: `TESSERA_SMS_PROVIDER=${raw} needs ${absent.join(', ')}` }
      : undefined;
  };
  const base = (name: string) => {
    const value = env[name] || undefined;
    if (value !== undefined && !/^https?:\/\/[^/@\s]+(\/\S*)?$/.test(value))
      return { error: `${name} must be an http:// or https:// URL without credentials` };
    return value;
  };
  switch (raw) {
    case 'http':
      return need(['TESSERA_SMS_URL']) ?? { kind: 'http' };
    case 'twilio': {
      const baseUrl = base('TESSERA_TWILIO_URL');
      if (typeof baseUrl === 'object') return baseUrl;
      const error = need(['TESSERA_TWILIO_ACCOUNT_SID', 'TESSERA_TWILIO_AUTH_TOKEN', 'TESSERA_SMS_FROM']);
      if (error) return error;
      if (!/^AC[0-9a-fA-F]{32}$/.test(env.TESSERA_TWILIO_ACCOUNT_SID!))
        return { error: 'TESSERA_TWILIO_ACCOUNT_SID must be AC followed by 32 hexadecimal digits' };
      return {
        kind: 'twilio',
        accountSid: env.TESSERA_TWILIO_ACCOUNT_SID!,
        authToken: env.TESSERA_TWILIO_AUTH_TOKEN!,
        baseUrl,
      };
    }
    case 'vonage': {
      const baseUrl = base('TESSERA_VONAGE_URL');
      if (typeof baseUrl === 'object') return baseUrl;
      const error = need(['TESSERA_VONAGE_API_KEY', 'TESSERA_VONAGE_API_SECRET', 'TESSERA_SMS_FROM']);
      if (error) return error;
      return {
        kind: 'vonage',
        apiKey: env.TESSERA_VONAGE_API_KEY!,
        apiSecret: env.TESSERA_VONAGE_API_SECRET!,
        baseUrl,
      };
    }
    default: {
      const endpoint = base('TESSERA_SNS_URL');
      if (typeof endpoint === 'object') return endpoint;
      const error = need([
        'TESSERA_SNS_REGION',
        'TESSERA_SNS_ACCESS_KEY_ID',
        'TESSERA_SNS_SECRET_ACCESS_KEY',
      ]);
      if (error) return error;
      if (!/^[a-z]{2}(-[a-z]+)+-\d$/.test(env.TESSERA_SNS_REGION!))
        return { error: 'TESSERA_SNS_REGION must be an AWS region name such as us-east-1' };
      return {
        kind: 'sns',
        region: env.TESSERA_SNS_REGION!,
        accessKeyId: env.TESSERA_SNS_ACCESS_KEY_ID!,
        secretAccessKey: env.TESSERA_SNS_SECRET_ACCESS_KEY!,
        sessionToken: env.TESSERA_SNS_SESSION_TOKEN || undefined,
        endpoint,
      };
    }
  }
}

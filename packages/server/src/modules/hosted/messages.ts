/** The hosted pages' texts, in the languages they speak (issue 31: English, French, German). */
export const LOCALES = ['en', 'fr', 'de'] as const;
export type Locale = (typeof LOCALES)[number];

const en = {
  signInTo: 'Sign in to {client}',
  via: '{project} signs you in',
  identifier: 'E-mail address or phone number',
  sendCode: 'Send me a code',
  codeSentTo: 'We sent a code to {to}.',
  code: 'Code',
  signIn: 'Sign in',
  useAnother: 'Use another address',
  consentTitle: '{client} wants to access your account',
  consentHost: 'After you allow it, you go back to {host}.',
  consentPublisher: 'This application describes itself at {host}: only allow it if you trust {host}.',
  consentAsks: 'It asks for:',
  allow: 'Allow',
  deny: 'Deny',
  errorTitle: 'This sign-in cannot continue',
  errorBack: 'Go back to the application and try again.',
  redirecting: 'Returning to the application…',
  continue: 'Continue',
  signedOut: 'You are signed out.',
  scope_openid: 'Know who you are',
  scope_profile: 'Your profile',
  scope_email: 'Your e-mail address',
  scope_phone: 'Your phone number',
  scope_offline_access: 'Stay signed in when you are away',
};
export type Messages = typeof en;

const fr: Messages = {
  signInTo: 'Se connecter à {client}',
  via: '{project} vous connecte',
  identifier: 'Adresse e-mail ou numéro de téléphone',
  sendCode: 'Recevoir un code',
  codeSentTo: 'Nous avons envoyé un code à {to}.',
  code: 'Code',
  signIn: 'Se connecter',
  useAnother: 'Utiliser une autre adresse',
  consentTitle: '{client} demande l’accès à votre compte',
  consentHost: 'Si vous acceptez, vous retournerez sur {host}.',
  consentPublisher:
    'Cette application se décrit sur {host} : ne l’autorisez que si vous faites confiance à {host}.',
  consentAsks: 'Il demande :',
  allow: 'Autoriser',
  deny: 'Refuser',
  errorTitle: 'Cette connexion ne peut pas continuer',
  errorBack: 'Retournez dans l’application et réessayez.',
  redirecting: 'Retour à l’application…',
  continue: 'Continuer',
  signedOut: 'Vous êtes déconnecté.',
  scope_openid: 'Savoir qui vous êtes',
  scope_profile: 'Votre profil',
  scope_email: 'Votre adresse e-mail',
  scope_phone: 'Votre numéro de téléphone',
  scope_offline_access: 'Rester connecté en votre absence',
};

const de: Messages = {
  signInTo: 'Bei {client} anmelden',
  via: '{project} meldet Sie an',
  identifier: 'E-Mail-Adresse oder Telefonnummer',
  sendCode: 'Code senden',
  codeSentTo: 'Wir haben einen Code an {to} gesendet.',
  code: 'Code',
  signIn: 'Anmelden',
  useAnother: 'Andere Adresse verwenden',
  consentTitle: '{client} möchte auf Ihr Konto zugreifen',
  consentHost: 'Wenn Sie zustimmen, kehren Sie zu {host} zurück.',
  consentPublisher:
    'Diese Anwendung beschreibt sich unter {host}: Erlauben Sie sie nur, wenn Sie {host} vertrauen.',
  consentAsks: 'Angefragt wird:',
  allow: 'Erlauben',
  deny: 'Ablehnen',
  errorTitle: 'Diese Anmeldung kann nicht fortgesetzt werden',
  errorBack: 'Kehren Sie zur Anwendung zurück und versuchen Sie es erneut.',
  redirecting: 'Zurück zur Anwendung…',
  continue: 'Weiter',
  signedOut: 'Sie sind abgemeldet.',
  scope_openid: 'Wissen, wer Sie sind',
  scope_profile: 'Ihr Profil',
  scope_email: 'Ihre E-Mail-Adresse',
  scope_phone: 'Ihre Telefonnummer',
  scope_offline_access: 'Angemeldet bleiben, wenn Sie nicht da sind',
};

const ALL: Record<Locale, Messages> = { en, fr, de };

/** The page's language: the first of `ui_locales` we speak, then Accept-Language's, then English. */
export function chooseLocale(uiLocales: string | undefined, acceptLanguage: string | undefined): Locale {
  const wanted = [
    ...(uiLocales ?? '').split(' '),
    ...(acceptLanguage ?? '')
      .split(',')
      .map((part) => part.split(';'))
      .filter(([, q]) => !q || !/^\s*q=0(\.0*)?\s*$/.test(q))
      .map(([tag]) => tag!.trim()),
  ];
  for (const tag of wanted) {
    const base = tag.toLowerCase().split('-')[0] as Locale;
    if (LOCALES.includes(base)) return base;
  }
  return 'en';
}

export function messages(locale: Locale): Messages {
  return ALL[locale];
}

/** A message with its `{name}` placeholders filled (the values are escaped by the page). */
export function fill(text: string, values: Record<string, string>): string {
  return text.replace(/\{(\w+)\}/g, (_, name: string) => values[name] ?? '');
}

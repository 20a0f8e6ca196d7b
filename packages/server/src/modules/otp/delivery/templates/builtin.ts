import type { LocaleTemplates } from './types.js';

/** The built-in texts, one complete set per locale. `en` is the last fallback of every field. */
export const BUILTIN: Readonly<Record<string, Required<LocaleTemplates>>> = {
  en: {
    email_subject: 'Your {{brand}} sign-in code',
    email_text:
      'Your {{brand}} sign-in code is:\n\n{{code}}\n\nIt expires in {{lifetime}}.\n\nIf you did not ask for this code, you can ignore this e-mail.\n',
    email_html: html(
      'en',
      'Your {{brand}} sign-in code is:',
      'It expires in {{lifetime}}.',
      'If you did not ask for this code, you can ignore this e-mail.',
    ),
    sms_text: '{{code}} is your {{brand}} sign-in code. It expires in {{lifetime}}.',
  },
  fr: {
    email_subject: 'Votre code de connexion {{brand}}',
    email_text:
      'Votre code de connexion {{brand}} est :\n\n{{code}}\n\nIl expire dans {{lifetime}}.\n\nSi vous n’avez pas demandé ce code, vous pouvez ignorer cet e-mail.\n',
    email_html: html(
      'fr',
      'Votre code de connexion {{brand}} est :',
      'Il expire dans {{lifetime}}.',
      'Si vous n’avez pas demandé ce code, vous pouvez ignorer cet e-mail.',
    ),
    sms_text: '{{code}} est votre code de connexion {{brand}}. Il expire dans {{lifetime}}.',
  },
  de: {
    email_subject: 'Ihr Anmeldecode für {{brand}}',
    email_text:
      'Ihr Anmeldecode für {{brand}} lautet:\n\n{{code}}\n\nEr läuft in {{lifetime}} ab.\n\nWenn Sie diesen Code nicht angefordert haben, können Sie diese E-Mail ignorieren.\n',
    email_html: html(
      'de',
      'Ihr Anmeldecode für {{brand}} lautet:',
      'Er läuft in {{lifetime}} ab.',
      'Wenn Sie diesen Code nicht angefordert haben, können Sie diese E-Mail ignorieren.',
    ),
    sms_text: '{{code}} ist Ihr Anmeldecode für {{brand}}. Er läuft in {{lifetime}} ab.',
  },
};

function html(lang: string, intro: string, expiry: string, ignore: string): string {
  return [
    '<!doctype html>',
    `<html lang="${lang}"><body style="font-family: sans-serif">`,
    `<p>${intro}</p>`,
    '<p style="font-size: 24px; font-weight: bold; letter-spacing: 4px">{{code}}</p>',
    `<p>${expiry}</p>`,
    `<p>${ignore}</p>`,
    '</body></html>',
  ].join('\n');
}

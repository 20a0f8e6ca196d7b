import type { Logger } from 'pino';
import type { Config } from '../../../config/index.js';
import { type Delivery, DeliveryError, type OtpMessage, type SecurityNotice } from './delivery.js';
import { DevOutbox } from './dev-outbox.js';
import { type ProviderNames, providerName } from './observed.js';
import { HttpSmsDelivery } from './sms.js';
import { SmtpDelivery } from './smtp.js';
import { SnsSmsDelivery } from './sns.js';
import { TwilioSmsDelivery } from './twilio.js';
import { VonageSmsDelivery } from './vonage.js';

/** Sends each message through the provider of its channel. */
class ChannelRouter implements Delivery, ProviderNames {
  constructor(
    private readonly email: Delivery | undefined,
    private readonly sms: Delivery | undefined,
  ) {}

  send(message: OtpMessage): Promise<void> {
    return this.#provider(message.channel).then((provider) => provider.send(message));
  }

  notify(notice: SecurityNotice): Promise<void> {
    return this.#provider(notice.channel).then((provider) => provider.notify(notice));
  }

  /** The provider of a channel by name, for metrics and logs (`none` when not configured). */
  providerFor(channel: OtpMessage['channel']): string {
    return providerName(channel === 'email' ? this.email : this.sms);
  }

  #provider(channel: OtpMessage['channel']): Promise<Delivery> {
    const provider = channel === 'email' ? this.email : this.sms;
    if (!provider) {
      return Promise.reject(
        new DeliveryError(`no ${channel === 'email' ? 'SMTP' : 'SMS'} provider is configured`),
      );
    }
    return Promise.resolve(provider);
  }

  async close(): Promise<void> {
    await Promise.all([this.email?.close(), this.sms?.close()]);
  }
}

/** The delivery the configuration asks for: the development outbox, or SMTP and/or HTTP SMS. */
export function createDelivery(config: Config['delivery'], logger: Logger): Delivery {
  if (config.mode === 'dev') return new DevOutbox({}, logger);
  return new ChannelRouter(
    config.smtpUrl ? new SmtpDelivery({ url: config.smtpUrl, from: config.mailFrom }, logger) : undefined,
    smsDelivery(config, logger),
  );
}

/** The SMS adapter TESSERA_SMS_PROVIDER names (config/sms-provider.ts checked its settings). */
function smsDelivery(config: Config['delivery'], logger: Logger): Delivery | undefined {
  const provider = config.smsProvider;
  const from = config.smsFrom ?? '';
  switch (provider?.kind) {
    case undefined:
      return undefined;
    case 'http':
      return new HttpSmsDelivery(
        { url: config.smsUrl ?? '', token: config.smsToken, from: config.smsFrom },
        logger,
      );
    case 'twilio':
      return new TwilioSmsDelivery(
        { ...provider, from, ...(provider.baseUrl ? { baseUrl: provider.baseUrl } : {}) },
        logger,
      );
    case 'vonage':
      return new VonageSmsDelivery(
        { ...provider, from, ...(provider.baseUrl ? { baseUrl: provider.baseUrl } : {}) },
        logger,
      );
    case 'sns':
      return new SnsSmsDelivery(
        {
          region: provider.region,
          accessKeyId: provider.accessKeyId,
          secretAccessKey: provider.secretAccessKey,
          ...(provider.sessionToken ? { sessionToken: provider.sessionToken } : {}),
          ...(provider.endpoint ? { endpoint: provider.endpoint } : {}),
          ...(config.smsFrom ? { senderId: config.smsFrom } : {}),
        },
        logger,
      );
  }
}

export { type Delivery, DeliveryError, DevOutbox, type SecurityNotice };

import type { FastifyPluginAsync, FastifyReply, FastifyRequest, onRequestAsyncHookHandler } from 'fastify';
import { randomToken } from '../../crypto/random.js';
import { OAuthError, TesseraError } from '../../errors.js';
import type { KeyStore } from '../../keys/key-store.js';
import { clientAddress, clientNetwork } from '../../net/client-network.js';
import { knownErrorOf } from '../../plugins/error-handler.js';
import type { AuthorizeService, HostedSession, Outcome } from '../authorize/authorize.service.js';
import { REQUEST_TTL_MS } from '../authorize/authorize.service.js';
import type { RawParams } from '../authorize/request.js';
import type { ClientsService } from '../clients/clients.service.js';
import { isUrlClientId, MetadataDocumentError } from '../clients/metadata-document.js';
import { matchRedirectUri } from '../clients/redirect-uri.js';
import { acceptedLanguages } from '../otp/delivery/templates/locale.js';
import type { OtpService } from '../otp/otp.service.js';
import type { Project } from '../projects/project.js';
import type { VerifyService } from '../verify/verify.service.js';
import { HOSTED_JS } from './assets.js';
import { cookieNames, readCookies, setCookie } from './cookies.js';
import { idTokenHint } from './id-token-hint.js';
import { chooseLocale, type Locale, messages } from './messages.js';
import {
  type Branding,
  brandCss,
  codePage,
  consentPage,
  errorPage,
  FORM_POST_JS,
  formPostPage,
  HOSTED_CSS,
  identifierPage,
  noticePage,
  pageHeaders,
} from './pages.js';

export interface HostedRoutesDeps {
  authorize: AuthorizeService;
  clients: ClientsService;
  otp: OtpService;
  verify: Pick<VerifyService, 'verify'>;
  keys: KeyStore;
  /** The project of a session (the client of an ID token whose `aud` is a metadata document URL). */
  projectOfSession(sessionId: string): Promise<Project | undefined>;
  /** Ends the session an ID token names, when it is that client's (RP-initiated logout). */
  revokeClientSession(sessionId: string, clientId: string): Promise<void>;
  ipLimit: onRequestAsyncHookHandler;
  secure: boolean;
  projects: { byApiKeyId(apiKeyId: string): Promise<Project | undefined> };
  /** The `<tessera-sign-in>` browser bundle, when built (see assets.ts). */
  signInBundle?: string;
}

type Form = Record<string, string | undefined>;

/** What the pages show of a project: its branding's display name and colours (migration 017). */
const brandOf = (project: Project, client: string): Branding => ({
  project: project.branding?.display_name ?? project.name,
  client,
  ...(project.branding?.primary_color || project.branding?.primary_color_dark
    ? { css: `/oauth/assets/brand/${encodeURIComponent(project.api_key_id)}.css?v=${brandVersion(project)}` }
    : {}),
});

/** Changes when the colours do, so a cached stylesheet is not reused for new colours. */
const brandVersion = (project: Project) =>
  `${project.branding?.primary_color ?? ''}${project.branding?.primary_color_dark ?? ''}`.replace(/#/g, '');

const html = (description: string) => ({
  description,
  content: { 'text/html': { schema: { type: 'string' } } },
});
/** What the hosted endpoints answer: redirects, and pages (errors too) in HTML. */
const HTML_RESPONSES = {
  200: html('A page: the form_post answer, or the signed-out notice'),
  303: {
    description: 'To the hosted sign-in or consent page, or to the client’s redirect URI with the answer',
  },
  '4XX': html('Tessera’s error page (never a redirect to an untrusted URI)'),
  '5XX': html('Tessera’s error page'),
};

const ProjectParams = {
  type: 'object',
  properties: { api_key_id: { type: 'string', minLength: 1, maxLength: 100 } },
  required: ['api_key_id'],
} as const;

const field = (form: Form | undefined, name: string): string => {
  const value = form?.[name];
  return typeof value === 'string' ? value : '';
};

/** The page's language: the request's ui_locales, then Accept-Language. */
const localeOf = (request: FastifyRequest, uiLocales?: string): Locale =>
  chooseLocale(uiLocales, request.headers['accept-language']);

/** What a user reads of a refusal (a 4xx's public text; never a secret). */
const readable = (error: unknown): string =>
  error instanceof TesseraError || error instanceof OAuthError
    ? error.message
    : 'something went wrong; try again';

/** The redirect URI with the answer's parameters added to its query (RFC 6749 §4.1.2). */
function withParams(redirectUri: string, params: Record<string, string>): string {
  const url = new URL(redirectUri);
  for (const [name, value] of Object.entries(params)) url.searchParams.set(name, value);
  return url.href;
}

/** The origin a form_post page may submit to (its CSP form-action). */
function formTarget(redirectUri: string): string {
  const url = new URL(redirectUri);
  return url.origin !== 'null' ? url.origin : url.protocol;
}

/**
 * The hosted pages at the issuer (issue 31): the authorization endpoint, sign-in by code, the
 * consent screen and RP-initiated logout. Server-rendered HTML with a strict CSP, never framed;
 * each form carries a CSRF token bound to the pending request and to this browser's binding
 * cookie.
 */
export function hostedRoutes(deps: HostedRoutesDeps): FastifyPluginAsync {
  const { authorize, otp, verify } = deps;
  const cookieOptions = deps.secure;
  const names = cookieNames(deps.secure);

  const page = (reply: FastifyReply, status: number, html: string, target?: string, element = false) =>
    reply.code(status).headers(pageHeaders(target, element)).send(html);

  /** Sends the browser where the service decided. */
  const respond = (request: FastifyRequest, reply: FastifyReply, outcome: Outcome, locale: Locale) => {
    switch (outcome.kind) {
      case 'error_page':
        return page(reply, 400, errorPage(locale, outcome.description));
      case 'redirect':
        if (outcome.response_mode === 'form_post')
          return page(
            reply,
            200,
            formPostPage(locale, outcome.redirect_uri, outcome.params),
            formTarget(outcome.redirect_uri),
          );
        return reply
          .code(303)
          .headers({ 'cache-control': 'no-store', 'referrer-policy': 'no-referrer' })
          .redirect(withParams(outcome.redirect_uri, outcome.params), 303);
      case 'sign_in':
      case 'consent': {
        const path = outcome.kind === 'sign_in' ? '/oauth/sign-in' : '/oauth/consent';
        void request;
        return reply
          .code(303)
          .header('cache-control', 'no-store')
          .redirect(`${path}?request_id=${encodeURIComponent(outcome.request.id)}`, 303);
      }
    }
  };

  const cookiesOf = (request: FastifyRequest) => readCookies(request.headers.cookie);

  const formFields = (requestId: string, binding: string) => ({
    request_id: requestId,
    csrf: authorize.csrfToken(requestId, binding),
  });

  const hostedOf = async (request: FastifyRequest, project: Project): Promise<HostedSession | undefined> =>
    authorize.hostedSession(project, cookiesOf(request)[names.hosted(project.id)]);

  /** Signed in on these pages: the hosted session's cookie, then on to consent or the code. */
  const afterSignIn = async (
    request: FastifyRequest,
    reply: FastifyReply,
    pending: Awaited<ReturnType<AuthorizeService['pending']>>,
    sessionId: string,
    locale: Locale,
  ) => {
    const { outcome, cookie, expiresAt } = await authorize.signedIn(pending, sessionId);
    reply.header(
      'set-cookie',
      setCookie(names.hosted(pending.project.id), cookie, (expiresAt - Date.now()) / 1000, cookieOptions),
    );
    return respond(request, reply, outcome, locale);
  };

  return async (app) => {
    app.addHook('onRequest', deps.ipLimit);
    // Errors of these pages are pages too (never JSON, never a redirect to an untrusted URI).
    app.setErrorHandler((error, request, reply) => {
      // Fastify's own 4xx (a body it cannot parse, a bad content type) and a database that is away
      // are told as the other families tell them (knownErrorOf); only the unexpected is a 500.
      const known: OAuthError | TesseraError =
        error instanceof OAuthError
          ? error
          : knownErrorOf(error as Error, request.log, request.server.databaseOutage);
      if (known instanceof TesseraError && known.retryAfter !== undefined)
        reply.header('retry-after', String(known.retryAfter));
      return page(reply, known.statusCode, errorPage(localeOf(request), readable(known)));
    });

    app.get('/oauth/assets/hosted.css', { schema: { hide: true } }, async (_request, reply) =>
      reply.type('text/css; charset=utf-8').header('cache-control', 'public, max-age=3600').send(HOSTED_CSS),
    );
    if (deps.signInBundle) {
      const bundle = deps.signInBundle;
      for (const [path, body] of [
        ['/oauth/assets/sign-in.js', bundle],
        ['/oauth/assets/hosted.js', HOSTED_JS],
      ] as const)
        app.get(path, { schema: { hide: true } }, async (_request, reply) =>
          reply
            .type('text/javascript; charset=utf-8')
            .header('cache-control', 'public, max-age=300')
            .send(body),
        );
    }
    // The project's button colours (#rrggbb, checked when set): a stylesheet, not inline styles.
    app.get('/oauth/assets/brand/:file', { schema: { hide: true } }, async (request, reply) => {
      const file = (request.params as { file: string }).file;
      const project = file.endsWith('.css') ? await deps.projects.byApiKeyId(file.slice(0, -4)) : undefined;
      if (!project) return reply.code(404).type('text/css; charset=utf-8').send('');
      return reply
        .type('text/css; charset=utf-8')
        .header('cache-control', 'public, max-age=300')
        .send(brandCss(project.branding?.primary_color, project.branding?.primary_color_dark));
    });
    app.get('/oauth/assets/form-post.js', { schema: { hide: true } }, async (_request, reply) =>
      reply
        .type('text/javascript; charset=utf-8')
        .header('cache-control', 'public, max-age=3600')
        .send(FORM_POST_JS),
    );

    const authorizeHandler = async (request: FastifyRequest, reply: FastifyReply) => {
      const params = (request.method === 'POST' ? request.body : request.query) as RawParams;
      const cookies = cookiesOf(request);
      const held = cookies[names.binding];
      const binding = held && held.length <= 64 ? held : randomToken(24);
      // /oauth/authorize/{api_key_id}: the project's own endpoint (its metadata names it).
      const apiKeyId = (request.params as { api_key_id?: string } | undefined)?.api_key_id;
      const scope = apiKeyId === undefined ? undefined : await deps.projects.byApiKeyId(apiKeyId);
      const outcome =
        apiKeyId !== undefined && !scope
          ? ({ kind: 'error_page', description: 'no project has this API key id' } as const)
          : await authorize.authorize(
              params ?? {},
              { binding },
              (project) => cookies[names.hosted(project.id)],
              scope,
            );
      if (outcome.kind === 'sign_in' || outcome.kind === 'consent')
        reply.header('set-cookie', setCookie(names.binding, binding, REQUEST_TTL_MS / 1000, cookieOptions));
      const uiLocales = typeof params?.ui_locales === 'string' ? params.ui_locales : undefined;
      return respond(request, reply, outcome, localeOf(request, uiLocales));
    };
    const authorizeDoc = {
      summary:
        'Authorization endpoint: authorization code with PKCE S256 (RFC 6749, RFC 7636, OpenID Connect)',
      tags: ['oauth'],
      response: HTML_RESPONSES,
    };
    app.get('/oauth/authorize', { schema: { ...authorizeDoc, operationId: 'authorize' } }, authorizeHandler);
    app.post(
      '/oauth/authorize',
      { schema: { ...authorizeDoc, operationId: 'authorizePost' } },
      authorizeHandler,
    );
    const projectAuthorizeDoc = {
      ...authorizeDoc,
      summary:
        'Authorization endpoint of a project (its metadata names it): its registered clients, and Client ID Metadata Documents when it accepts them',
      params: ProjectParams,
    };
    app.get(
      '/oauth/authorize/:api_key_id',
      { schema: { ...projectAuthorizeDoc, operationId: 'authorizeAtProject' } },
      authorizeHandler,
    );
    app.post(
      '/oauth/authorize/:api_key_id',
      { schema: { ...projectAuthorizeDoc, operationId: 'authorizeAtProjectPost' } },
      authorizeHandler,
    );

    app.get('/oauth/sign-in', { schema: { hide: true } }, async (request, reply) => {
      const query = request.query as Form;
      const binding = cookiesOf(request)[names.binding];
      const pending = await authorize.pending(field(query, 'request_id'), binding);
      const { params } = pending.request;
      const locale = localeOf(request, params.ui_locales);
      return page(
        reply,
        200,
        identifierPage(
          locale,
          brandOf(pending.project, pending.client.name),
          formFields(pending.request.id, binding!),
          params.login_hint,
          undefined,
          deps.signInBundle ? { issuer: authorize.issuer, apiKeyId: pending.project.api_key_id } : undefined,
        ),
        // The element's hand-over redirects to the client.
        formTarget(params.redirect_uri),
        deps.signInBundle !== undefined,
      );
    });

    app.post('/oauth/sign-in/start', { schema: { hide: true } }, async (request, reply) => {
      const body = request.body as Form;
      const binding = cookiesOf(request)[names.binding];
      const pending = await authorize.pending(field(body, 'request_id'), binding, field(body, 'csrf'));
      const locale = localeOf(request, pending.request.params.ui_locales);
      const brand = brandOf(pending.project, pending.client.name);
      const fields = formFields(pending.request.id, binding!);
      const identifier = field(body, 'identifier').trim().slice(0, 320);
      try {
        const started = await otp.start(
          pending.project,
          identifier,
          clientNetwork(request.ip),
          { ip: clientAddress(request.ip) },
          [locale, ...acceptedLanguages(request.headers['accept-language'])],
        );
        return page(
          reply,
          200,
          codePage(
            locale,
            brand,
            { ...fields, challenge_id: started.challenge_id, to: identifier },
            identifier,
          ),
          // The code form's answer redirects to the client: CSP form-action covers redirects.
          formTarget(pending.request.params.redirect_uri),
        );
      } catch (error) {
        if (!(error instanceof TesseraError) || error.statusCode >= 500) throw error;
        return page(
          reply,
          error.statusCode,
          identifierPage(locale, brand, fields, identifier, error.message),
        );
      }
    });

    app.post('/oauth/sign-in/complete', { schema: { hide: true } }, async (request, reply) => {
      const body = request.body as Form;
      const binding = cookiesOf(request)[names.binding];
      const pending = await authorize.pending(field(body, 'request_id'), binding, field(body, 'csrf'));
      const locale = localeOf(request, pending.request.params.ui_locales);
      const challengeId = field(body, 'challenge_id').slice(0, 100);
      const to = field(body, 'to').slice(0, 320);
      let sessionId: string;
      try {
        const result = await otp.complete(
          pending.project,
          challengeId,
          field(body, 'code').trim(),
          true,
          clientNetwork(request.ip),
        );
        sessionId = await sessionOf(
          pending.project,
          'oauth_token' in result ? result.oauth_token.access_token : '',
        );
      } catch (error) {
        if (!(error instanceof TesseraError) || error.statusCode >= 500) throw error;
        const fields = { ...formFields(pending.request.id, binding!), challenge_id: challengeId, to };
        const brand = brandOf(pending.project, pending.client.name);
        return page(
          reply,
          error.statusCode,
          codePage(locale, brand, fields, to, error.message),
          formTarget(pending.request.params.redirect_uri),
        );
      }
      return afterSignIn(request, reply, pending, sessionId, locale);
    });

    /**
     * The hand-over from the sign-in element (`<tessera-sign-in>` on these pages, packages/ui):
     * after it signed in through /v1/auth/*, the page's own script posts the access token here
     * with the form's CSRF token. Only a fresh sign-in is taken (auth_time within the request's life).
     */
    app.post('/oauth/authorize/continue', { schema: { hide: true } }, async (request, reply) => {
      const body = request.body as Form;
      const binding = cookiesOf(request)[names.binding];
      const pending = await authorize.pending(field(body, 'request_id'), binding, field(body, 'csrf'));
      const sessionId = await sessionOf(pending.project, field(body, 'access_token'));
      return afterSignIn(
        request,
        reply,
        pending,
        sessionId,
        localeOf(request, pending.request.params.ui_locales),
      );
    });

    /** The session of an access token the project's sign-in issued (`signedIn` checks it is fresh). */
    async function sessionOf(project: Project, accessToken: string): Promise<string> {
      const result = await verify.verify(accessToken, project.api_key_id);
      if (!result.success) throw new OAuthError(400, 'invalid_request', 'the sign-in is not valid');
      return result.claims.sid;
    }

    app.get('/oauth/consent', { schema: { hide: true } }, async (request, reply) => {
      const query = request.query as Form;
      const binding = cookiesOf(request)[names.binding];
      const pending = await authorize.pending(field(query, 'request_id'), binding);
      const hosted = await hostedOf(request, pending.project);
      if (!hosted) throw new OAuthError(400, 'invalid_request', 'sign in first');
      const { params } = pending.request;
      return page(
        reply,
        200,
        consentPage(
          localeOf(request, params.ui_locales),
          brandOf(pending.project, pending.client.name),
          formFields(pending.request.id, binding!),
          new URL(params.redirect_uri).host || new URL(params.redirect_uri).protocol,
          params.scopes,
          isUrlClientId(pending.client.client_id) ? new URL(pending.client.client_id).host : undefined,
        ),
        formTarget(params.redirect_uri),
      );
    });

    app.post('/oauth/consent', { schema: { hide: true } }, async (request, reply) => {
      const body = request.body as Form;
      const binding = cookiesOf(request)[names.binding];
      const pending = await authorize.pending(field(body, 'request_id'), binding, field(body, 'csrf'));
      const hosted = await hostedOf(request, pending.project);
      const outcome = await authorize.consented(pending, hosted, field(body, 'decision') === 'allow');
      return respond(request, reply, outcome, localeOf(request, pending.request.params.ui_locales));
    });

    /**
     * OpenID RP-Initiated Logout 1.0: `id_token_hint`, a registered `post_logout_redirect_uri`
     * (matched as redirect URIs are: exactly, a loopback IP one on any port for native apps), `state`.
     */
    const logout = async (request: FastifyRequest, reply: FastifyReply) => {
      const params = ((request.method === 'POST' ? request.body : request.query) ?? {}) as Form;
      const locale = localeOf(request, field(params, 'ui_locales') || undefined);
      const hint = idTokenHint(deps.keys, authorize.issuer, field(params, 'id_token_hint'));
      if (!hint)
        return page(reply, 400, errorPage(locale, 'id_token_hint must be an ID token this server issued'));
      // A metadata document's client is of the project of the session its ID token names.
      const client = isUrlClientId(hint.aud)
        ? await deps.clients
            .resolve(hint.aud, hint.sid ? await deps.projectOfSession(hint.sid) : undefined)
            .catch((error: unknown) => {
              if (error instanceof MetadataDocumentError) return undefined;
              throw error;
            })
        : await deps.clients.byClientId(hint.aud);
      if (!client) return page(reply, 400, errorPage(locale, 'the ID token’s client is not registered'));
      const named = field(params, 'client_id');
      if (named && named !== client.client_id)
        return page(reply, 400, errorPage(locale, 'client_id is not the ID token’s audience'));
      const target = field(params, 'post_logout_redirect_uri');
      if (target && !matchRedirectUri(client.post_logout_redirect_uris, target))
        return page(
          reply,
          400,
          errorPage(locale, 'post_logout_redirect_uri is not registered for this client'),
        );
      const projectCookie = names.hosted(client.project_id);
      const hosted = await authorize.hostedSession(
        { id: client.project_id } as Project,
        cookiesOf(request)[projectCookie],
      );
      if (hosted) await authorize.endHostedSession(hosted);
      if (hint.sid) await deps.revokeClientSession(hint.sid, client.client_id);
      reply.header('set-cookie', setCookie(projectCookie, '', 0, cookieOptions));
      if (!target) return page(reply, 200, noticePage(locale, messages(locale).signedOut));
      const state = field(params, 'state');
      return reply
        .code(303)
        .header('cache-control', 'no-store')
        .redirect(withParams(target, state ? { state } : {}), 303);
    };
    const logoutDoc = {
      summary: 'RP-initiated logout (OpenID RP-Initiated Logout 1.0)',
      tags: ['oauth'],
      response: HTML_RESPONSES,
    };
    app.get('/oauth/logout', { schema: { ...logoutDoc, operationId: 'endSession' } }, logout);
    app.post('/oauth/logout', { schema: { ...logoutDoc, operationId: 'endSessionPost' } }, logout);
  };
}

import type { Command } from 'commander';
import type { Config } from '../config/index.js';
import { OAuthError } from '../errors.js';
import type { Runtime } from '../main.js';
import type { ClientInformation } from '../modules/clients/client.js';
import type { ClientMetadataInput } from '../modules/clients/client-metadata.js';
import { ClientsRepository } from '../modules/clients/clients.repository.js';
import { ClientsService } from '../modules/clients/clients.service.js';
import { ProjectsRepository } from '../modules/projects/projects.repository.js';
import { ProjectsService } from '../modules/projects/projects.service.js';
import { SessionRepository } from '../modules/session/session.repository.js';
import { repeatable, UsageError } from './args.js';
import { resolve } from './projects.js';
import { auditLog, withRuntime } from './runtime.js';

/**
 * The clients service of a CLI run; a deleted client's sessions are revoked in the database. Its
 * audit events are recorded (and queued for webhooks) before the run ends (`settled`).
 */
function services(runtime: Runtime, config: Readonly<Config>) {
  const sessions = new SessionRepository(runtime.db);
  const audit = auditLog(runtime, config);
  const clients = new ClientsService(
    new ClientsRepository(runtime.db.kysely),
    {
      revokeClientSessions: (clientId, reason) => sessions.revokeClientSessions(clientId, reason, Date.now()),
    },
    Date.now,
    undefined,
    audit.log,
  );
  return {
    clients,
    projects: new ProjectsService(new ProjectsRepository(runtime.db)),
    settled: audit.settled,
  };
}

/** A refusal of the service (a field named) is a usage error: exit status 2. */
async function refusalsAsUsage<T>(run: () => Promise<T>): Promise<T> {
  try {
    return await run();
  } catch (error) {
    if (error instanceof OAuthError && error.statusCode < 500) throw new UsageError(error.message);
    throw error;
  }
}

function describe(client: ClientInformation): string {
  return [
    `client ${client.client_name}`,
    `  client id:        ${client.client_id}`,
    `  authentication:   ${client.token_endpoint_auth_method}${client.token_endpoint_auth_method === 'none' ? ' (public, PKCE)' : ''}`,
    `  redirect URIs:    ${client.redirect_uris.join(' ')}`,
    `  post-logout URIs: ${client.post_logout_redirect_uris.join(' ') || '(none)'}`,
    `  scopes:           ${client.scope}`,
    `  first-party:      ${client.first_party ? 'yes (no consent screen)' : 'no (consent screen)'}`,
    ...(client.client_secret ? [`  client secret:    ${client.client_secret}   (shown once)`] : []),
  ].join('\n');
}

interface CreateOptions {
  name: string;
  redirectUri: string[];
  postLogoutRedirectUri?: string[];
  authMethod?: string;
  public?: boolean;
  scope?: string;
  logoUri?: string;
  firstParty?: boolean;
  json?: boolean;
}

/** `tessera clients …`: a project's OAuth clients (issue 31), as the integrator API manages them. */
export function clientCommands(program: Command): void {
  const clients = program
    .command('clients')
    .description("manage a project's OAuth clients (OpenID Provider)");

  clients
    .command('create <project>')
    .description('register an OAuth client of a project (its secret, if any, is shown once)')
    .requiredOption('--name <name>', 'shown on the sign-in and consent pages')
    .requiredOption(
      '--redirect-uri <uri...>',
      'redirect URI, exact match (repeatable)',
      repeatable((v: string) => v),
    )
    .option(
      '--post-logout-redirect-uri <uri...>',
      'where logout may return (repeatable)',
      repeatable((v: string) => v),
    )
    .option('--public', 'a public client (SPA, native, CLI): no secret, PKCE only')
    .option('--auth-method <method>', 'client_secret_basic (default) or client_secret_post')
    .option('--scope <scopes>', 'allowed scopes (default: openid profile email phone offline_access)')
    .option('--logo-uri <url>', 'https URL of the logo')
    .option('--first-party', 'skip the consent screen')
    .option('--json', 'print the RFC 7591 client information as JSON')
    .action(async (ref: string, opts: CreateOptions) => {
      if (opts.public && opts.authMethod)
        throw new UsageError('--public and --auth-method exclude each other');
      await withRuntime(async (runtime, config) => {
        const { clients: service, projects, settled } = services(runtime, config);
        const project = await resolve(projects, ref);
        const metadata: ClientMetadataInput = {
          client_name: opts.name,
          redirect_uris: opts.redirectUri,
          post_logout_redirect_uris: opts.postLogoutRedirectUri,
          token_endpoint_auth_method: opts.public ? 'none' : opts.authMethod,
          scope: opts.scope,
          logo_uri: opts.logoUri,
          first_party: opts.firstParty === true,
        };
        const created = await refusalsAsUsage(() => service.register(project, metadata, 'cli'));
        await settled();
        console.log(opts.json ? JSON.stringify(created) : describe(created));
      });
    });

  clients
    .command('list <project>')
    .description("list a project's OAuth clients")
    .option('--json', 'print JSON')
    .action(async (ref: string, opts: { json?: boolean }) => {
      await withRuntime(async (runtime, config) => {
        const { clients: service, projects } = services(runtime, config);
        const list = await service.list(await resolve(projects, ref));
        if (opts.json) console.log(JSON.stringify({ clients: list }));
        else
          console.log(
            list
              .map((c) => `${c.client_id}  ${c.client_name}  (${c.token_endpoint_auth_method})`)
              .join('\n') || '(no clients)',
          );
      });
    });

  clients
    .command('show <project> <client_id>')
    .description('show an OAuth client')
    .option('--json', 'print JSON')
    .action(async (ref: string, clientId: string, opts: { json?: boolean }) => {
      await withRuntime(async (runtime, config) => {
        const { clients: service, projects } = services(runtime, config);
        const client = await refusalsAsUsage(async () => service.get(await resolve(projects, ref), clientId));
        console.log(opts.json ? JSON.stringify(client) : describe(client));
      });
    });

  clients
    .command('delete <project> <client_id>')
    .description('delete an OAuth client: its consents go and its sessions end')
    .action(async (ref: string, clientId: string) => {
      await withRuntime(async (runtime, config) => {
        const { clients: service, projects, settled } = services(runtime, config);
        await refusalsAsUsage(async () => service.delete(await resolve(projects, ref), clientId, 'cli'));
        await settled();
        console.log(`client ${clientId} deleted`);
      });
    });

  clients
    .command('rotate-secret <project> <client_id>')
    .description("replace a confidential client's secret (shown once); the old one stops working at once")
    .option('--json', 'print the RFC 7591 client information (with client_secret) as JSON')
    .action(async (ref: string, clientId: string, opts: { json?: boolean }) => {
      await withRuntime(async (runtime, config) => {
        const { clients: service, projects, settled } = services(runtime, config);
        const rotated = await refusalsAsUsage(async () =>
          service.rotateSecret(await resolve(projects, ref), clientId, 'cli'),
        );
        await settled();
        console.log(opts.json ? JSON.stringify(rotated) : describe(rotated));
      });
    });
}

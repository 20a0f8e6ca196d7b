import { readFileSync } from 'node:fs';
import type { Command } from 'commander';
import type { Config } from '../config/index.js';
import { MAX_TEMPLATES_BYTES } from '../modules/otp/delivery/templates/validate.js';
import { type Project, type ProjectView, serverSettings } from '../modules/projects/project.js';
import { ProjectsRepository } from '../modules/projects/projects.repository.js';
import { ProjectsService } from '../modules/projects/projects.service.js';
import {
  lifetimeArg,
  lifetimeOf,
  nameArg,
  originArg,
  repeatable,
  rpIdArg,
  smsCountriesArg,
  storedOriginArg,
  UsageError,
} from './args.js';
import { auditLog, withRuntime } from './runtime.js';

const service = (
  runtime: { db: ConstructorParameters<typeof ProjectsRepository>[0] },
  config: Readonly<Config>,
) => new ProjectsService(new ProjectsRepository(runtime.db), Date.now, serverSettings(config));

/** The project a `<project>` argument names: an API key id, else a name. */
export async function resolve(projects: ProjectsService, ref: string): Promise<Project> {
  const project = await projects.findByRef(ref);
  if (project) return project;
  throw new UsageError(
    ref.startsWith('pk_') ? `no project has the API key id ${ref}` : `no project named ${ref}`,
  );
}

const yesNo = (value: boolean) => (value ? 'yes' : 'no');

/** A lifetime in seconds as people read it: `900 s (15 min)`. */
function duration(seconds: number): string {
  const units: [number, string][] = [
    [86_400, 'd'],
    [3600, 'h'],
    [60, 'min'],
  ];
  const unit = units.find(([size]) => seconds >= size && seconds % size === 0);
  return unit ? `${seconds} s (${seconds / unit[0]} ${unit[1]})` : `${seconds} s`;
}

/** A project's own value, or the server's that it follows. */
function ownOrServer<T>(own: T | null, server: T, show: (value: T) => string): string {
  return own === null ? `${show(server)}, the server's` : show(own);
}

const countries = (list: readonly string[]) =>
  list.length === 0 ? 'none (SMS off)' : list.includes('*') ? 'all' : list.join(' ');

/** `projects show` without --json. */
function describe(project: Project, view: ProjectView): string {
  return [
    `project ${view.name}`,
    `  API key id:          ${view.api_key_id}`,
    `  project id:          ${view.project_id}`,
    `  origins:             ${view.origins.join(' ') || '(none)'}`,
    `  relying-party id:    ${view.rp_id ?? '(none)'}`,
    `  numeric auth_time:   ${yesNo(view.numeric_auth_time)}`,
    `  device requires PIN: ${yesNo(view.device_requires_pin)}`,
    `  open registration:   ${yesNo(view.open_registration)}`,
    `  metadata documents:  ${yesNo(view.client_id_metadata_documents)}`,
    `  SMS countries:       ${ownOrServer(view.sms_countries, view.server.sms_countries, countries)}`,
    `  access token:        ${ownOrServer(view.access_token_ttl, view.server.access_token_ttl, duration)}`,
    `  ID token:            ${ownOrServer(view.id_token_ttl, view.server.id_token_ttl, duration)}`,
    `  refresh token:       ${ownOrServer(view.refresh_token_ttl, view.server.refresh_token_ttl, duration)}`,
    `  created:             ${view.created_at}`,
    `  secret rotated:      ${view.secret_rotated_at ?? 'never'}`,
    `  message templates:   ${templatesSummary(project)}`,
    `  sign-in branding:    ${brandingSummary(project)}`,
  ].join('\n');
}

function brandingSummary(project: Project): string {
  const b = project.branding;
  if (!b) return 'none';
  return Object.entries(b)
    .map(([key, value]) => `${key} ${value}`)
    .join(', ');
}

function templatesSummary(project: Project): string {
  const templates = project.message_templates;
  if (!templates) return 'built-in';
  const locales = Object.keys(templates.locales).join(', ') || 'none';
  const brand = templates.brand === undefined ? '' : `, brand ${templates.brand}`;
  return `own texts for ${locales}${brand}`;
}

/** `--template-file <path>`: the JSON of a project's message templates (checked by the service). */
function readTemplateFile(path: string): unknown {
  let raw: string;
  try {
    raw = readFileSync(path, 'utf8');
  } catch (error) {
    throw new UsageError(
      `cannot read the template file ${path}: ${(error as NodeJS.ErrnoException).code ?? 'error'}`,
    );
  }
  if (Buffer.byteLength(raw) > MAX_TEMPLATES_BYTES)
    throw new UsageError(`the template file ${path} is larger than ${MAX_TEMPLATES_BYTES / 1024} KiB`);
  try {
    return JSON.parse(raw) as unknown;
  } catch (error) {
    throw new UsageError(`the template file ${path} is not JSON: ${(error as Error).message}`);
  }
}

interface SettingsOptions {
  rpId?: string;
  numericAuthTime?: boolean;
  deviceRequiresPin?: boolean;
  /** `server`: follow the server's lifetime. */
  accessTokenTtl?: number | 'server';
  idTokenTtl?: number | 'server';
  refreshTokenTtl?: number | 'server';
  json?: boolean;
}

/** `tessera projects …`. */
export function projectCommands(program: Command): void {
  const projects = program.command('projects').description('manage integrator projects');

  projects
    .command('create')
    .description('create a project and print its API key id and secret (the secret is shown once)')
    .requiredOption('--name <name>', 'project name (unique)', nameArg)
    .option('--origin <url...>', 'allowed browser origin (repeatable)', repeatable(originArg))
    .option('--rp-id <id>', 'WebAuthn relying-party id (default: host of the first origin)', rpIdArg)
    .option('--numeric-auth-time', 'emit auth_time as a number in ID tokens (strict OIDC clients)')
    .option(
      '--device-requires-pin',
      'require the PIN on every device sign-in (TRUSTED DEVICE alone is refused)',
    )
    .option(
      '--sms-countries <codes>',
      'countries SMS codes may go to, e.g. US,CA,GB ("*": all; default: TESSERA_SMS_COUNTRIES)',
      smsCountriesArg,
    )
    .option(
      '--access-token-ttl <seconds>',
      'access token lifetime (default and longest: TESSERA_ACCESS_TOKEN_TTL)',
      lifetimeArg,
    )
    .option(
      '--id-token-ttl <seconds>',
      'ID token lifetime (default and longest: TESSERA_ID_TOKEN_TTL)',
      lifetimeArg,
    )
    .option(
      '--refresh-token-ttl <seconds>',
      'refresh token lifetime (default and longest: TESSERA_REFRESH_TOKEN_TTL)',
      lifetimeArg,
    )
    .option('--json', 'print {"api_key_id","api_key_secret"} as JSON')
    .action(async (opts: SettingsOptions & { name: string; origin?: string[]; smsCountries?: string }) => {
      await withRuntime(async (runtime, config) => {
        const created = await service(runtime, config).create({
          name: opts.name,
          origins: opts.origin ?? [],
          rpId: opts.rpId,
          numericAuthTime: opts.numericAuthTime,
          deviceRequiresPin: opts.deviceRequiresPin,
          smsCountries: opts.smsCountries,
          accessTokenTtl: lifetimeOf(opts.accessTokenTtl) ?? undefined,
          idTokenTtl: lifetimeOf(opts.idTokenTtl) ?? undefined,
          refreshTokenTtl: lifetimeOf(opts.refreshTokenTtl) ?? undefined,
        });
        if (opts.json) {
          console.log(
            JSON.stringify({ api_key_id: created.api_key_id, api_key_secret: created.api_key_secret }),
          );
        } else {
          console.log(
            `project ${created.name} created\n  API key id:     ${created.api_key_id}\n  API key secret: ${created.api_key_secret}   (shown once)`,
          );
        }
      });
    });

  projects
    .command('list')
    .description('list projects')
    .option('--json', 'print JSON')
    .action(async (opts: { json?: boolean }) => {
      await withRuntime(async (runtime, config) => {
        const list = (await service(runtime, config).list()).map((p) => ({
          name: p.name,
          api_key_id: p.api_key_id,
          origins: p.origins,
          rp_id: p.rp_id,
          created_at: new Date(p.created_at).toISOString(),
        }));
        if (opts.json) console.log(JSON.stringify(list, null, 2));
        else for (const p of list) console.log(`${p.api_key_id}  ${p.name}  ${p.origins.join(' ')}`);
      });
    });

  projects
    .command('show')
    .description('show a project’s settings (never its secret)')
    .argument('<project>', 'API key id or project name')
    .option('--json', 'print JSON')
    .action(async (ref: string, opts: { json?: boolean }) => {
      await withRuntime(async (runtime, config) => {
        const projects = service(runtime, config);
        const project = await resolve(projects, ref);
        const view = projects.view(project);
        console.log(opts.json ? JSON.stringify(view, null, 2) : describe(project, view));
      });
    });

  projects
    .command('update')
    .description(
      'change a project’s name, origins, relying-party id, policies, SMS countries or token lifetimes',
    )
    .argument('<project>', 'API key id or project name')
    .option('--name <name>', 'new name (unique)', nameArg)
    .option('--origin <url...>', 'replace the allowed origins with these (repeatable)', repeatable(originArg))
    .option('--add-origin <url...>', 'allow another origin (repeatable)', repeatable(originArg))
    .option('--remove-origin <url...>', 'stop allowing an origin (repeatable)', repeatable(storedOriginArg))
    .option('--rp-id <id>', 'WebAuthn relying-party id (passkeys made for the old one stop working)', rpIdArg)
    .option('--numeric-auth-time', 'emit auth_time as a number in ID tokens')
    .option('--no-numeric-auth-time', 'emit auth_time as a string of digits (the specification’s form)')
    .option('--device-requires-pin', 'require the PIN on every device sign-in')
    .option('--no-device-requires-pin', 'let a trusted device sign in alone')
    .option(
      '--template-file <path>',
      'set the project’s OTP e-mail and SMS texts from a JSON file (docs/OPERATIONS.md#message-templates)',
    )
    .option('--clear-templates', 'go back to the built-in OTP e-mail and SMS texts')
    .option('--brand-name <name>', 'the name the sign-in UI shows (instead of the project name)')
    .option('--logo-url <url>', 'the logo the sign-in UI shows (https)')
    .option('--primary-color <hex>', 'the sign-in UI’s button colour in the light theme, #rrggbb')
    .option('--primary-color-dark <hex>', 'the sign-in UI’s button colour in the dark theme, #rrggbb')
    .option('--clear-branding', 'remove the sign-in UI’s branding')
    .option('--open-registration', 'let anyone register an OAuth client (RFC 7591 dynamic registration)')
    .option('--no-open-registration', 'close dynamic client registration (the default)')
    .option(
      '--client-id-metadata-documents',
      'accept clients named by the https URL of their metadata document (the MCP way)',
    )
    .option('--no-client-id-metadata-documents', 'refuse client ids that are URLs (the default)')
    .option(
      '--sms-countries <codes>',
      'countries SMS codes may go to, e.g. US,CA,GB ("*": all; "": none)',
      smsCountriesArg,
    )
    .option('--server-sms-countries', 'follow the server’s TESSERA_SMS_COUNTRIES again')
    .option(
      '--access-token-ttl <seconds>',
      'access token lifetime, at most TESSERA_ACCESS_TOKEN_TTL ("server": the server’s)',
      lifetimeArg,
    )
    .option(
      '--id-token-ttl <seconds>',
      'ID token lifetime, at most TESSERA_ID_TOKEN_TTL ("server": the server’s)',
      lifetimeArg,
    )
    .option(
      '--refresh-token-ttl <seconds>',
      'refresh token lifetime for new sessions, at most TESSERA_REFRESH_TOKEN_TTL ("server": the server’s)',
      lifetimeArg,
    )
    .option('--json', 'print the updated project as JSON')
    .action(
      async (
        ref: string,
        opts: SettingsOptions & {
          name?: string;
          origin?: string[];
          addOrigin?: string[];
          removeOrigin?: string[];
          templateFile?: string;
          clearTemplates?: boolean;
          brandName?: string;
          logoUrl?: string;
          primaryColor?: string;
          primaryColorDark?: string;
          clearBranding?: boolean;
          openRegistration?: boolean;
          clientIdMetadataDocuments?: boolean;
          smsCountries?: string;
          serverSmsCountries?: boolean;
        },
      ) => {
        if (opts.smsCountries !== undefined && opts.serverSmsCountries)
          throw new UsageError('give either --sms-countries or --server-sms-countries, not both');
        const brandingGiven = {
          ...(opts.brandName !== undefined && { display_name: opts.brandName }),
          ...(opts.logoUrl !== undefined && { logo_url: opts.logoUrl }),
          ...(opts.primaryColor !== undefined && { primary_color: opts.primaryColor }),
          ...(opts.primaryColorDark !== undefined && { primary_color_dark: opts.primaryColorDark }),
        };
        const brandingChanged = Object.keys(brandingGiven).length > 0;
        if (brandingChanged && opts.clearBranding)
          throw new UsageError('give either branding options or --clear-branding, not both');
        if (opts.templateFile !== undefined && opts.clearTemplates)
          throw new UsageError('give either --template-file or --clear-templates, not both');
        const messageTemplates = opts.clearTemplates
          ? null
          : opts.templateFile === undefined
            ? undefined
            : readTemplateFile(opts.templateFile);
        await withRuntime(async (runtime, config) => {
          const projects = service(runtime, config);
          const project = await resolve(projects, ref);
          // The options given change those members; the others stay as they are.
          const branding = opts.clearBranding
            ? null
            : brandingChanged
              ? { ...project.branding, ...brandingGiven }
              : undefined;
          const updated = await projects.update(project.api_key_id, {
            name: opts.name,
            origins: opts.origin,
            addOrigins: opts.addOrigin,
            removeOrigins: opts.removeOrigin,
            rpId: opts.rpId,
            numericAuthTime: opts.numericAuthTime,
            deviceRequiresPin: opts.deviceRequiresPin,
            messageTemplates,
            branding,
            openRegistration: opts.openRegistration,
            clientIdMetadataDocuments: opts.clientIdMetadataDocuments,
            smsCountries: opts.serverSmsCountries ? null : opts.smsCountries,
            accessTokenTtl: lifetimeOf(opts.accessTokenTtl),
            idTokenTtl: lifetimeOf(opts.idTokenTtl),
            refreshTokenTtl: lifetimeOf(opts.refreshTokenTtl),
          });
          const view = projects.view(updated);
          console.log(opts.json ? JSON.stringify(view, null, 2) : `updated ${describe(updated, view)}`);
        });
      },
    );

  projects
    .command('delete')
    .description('delete a project with its users, sessions, credentials, webhooks and audit events')
    .argument('<project>', 'API key id or project name')
    .option('--yes', 'confirm: the deletion cannot be undone')
    .option('--json', 'print JSON')
    .action(async (ref: string, opts: { yes?: boolean; json?: boolean }) => {
      await withRuntime(async (runtime, config) => {
        const projects = service(runtime, config);
        const project = await resolve(projects, ref);
        if (!opts.yes) {
          throw new UsageError(
            `deleting project ${project.name} (${project.api_key_id}) removes its users, sessions and credentials for good; add --yes to confirm`,
          );
        }
        const { users } = await projects.delete(project.api_key_id);
        if (opts.json)
          console.log(
            JSON.stringify({ api_key_id: project.api_key_id, name: project.name, users_deleted: users }),
          );
        else console.log(`project ${project.name} (${project.api_key_id}) deleted with its ${users} user(s)`);
      });
    });

  projects
    .command('rotate-secret')
    .description(
      'replace the API key secret of a project (by API key id or name); the old one stops working at once',
    )
    .argument('<project>', 'API key id or project name')
    .option('--json', 'print JSON')
    .action(async (ref: string, opts: { json?: boolean }) => {
      await withRuntime(async (runtime, config) => {
        const projects = service(runtime, config);
        const project = await resolve(projects, ref);
        const rotated = await projects.rotateSecret(project.api_key_id);
        const audit = auditLog(runtime, config);
        await audit.log.record({
          projectId: rotated.project_id,
          type: 'project.secret_rotated',
          data: { by: 'cli' },
        });
        await audit.settled();
        if (opts.json)
          console.log(
            JSON.stringify({ api_key_id: rotated.api_key_id, api_key_secret: rotated.api_key_secret }),
          );
        else console.log(`new API key secret for ${rotated.name}: ${rotated.api_key_secret}   (shown once)`);
      });
    });
}

import type { Command } from 'commander';
import type { ConsoleRole } from '../db/schema.js';
import type { Runtime } from '../main.js';
import { ConsoleMembersRepository } from '../modules/console/console-members.repository.js';
import { ConsoleRoster } from '../modules/console/console-roster.js';
import { isConsoleRole } from '../modules/console/permissions.js';
import { ProjectsRepository } from '../modules/projects/projects.repository.js';
import { ProjectsService } from '../modules/projects/projects.service.js';
import { UsageError } from './args.js';
import { withRuntime } from './runtime.js';

const roster = (runtime: Runtime) =>
  new ConsoleRoster(
    new ConsoleMembersRepository(runtime.db),
    new ProjectsService(new ProjectsRepository(runtime.db)),
  );

function roleArg(value: string): ConsoleRole {
  if (!isConsoleRole(value))
    throw new UsageError(`unknown role ${value}: one of operator, admin, support, viewer`);
  return value;
}

/**
 * `tessera console …`: who may use the console (issue 33, docs/CONSOLE.md). A member signs in to
 * the console as a user of its built-in project, with the identifier granted here.
 */
export function consoleCommands(program: Command): void {
  const console_ = program.command('console').description('console members and their roles');

  console_
    .command('grant')
    .description(
      'give <identifier> a console role: operator (every project), or admin | support | viewer of --project',
    )
    .argument('<identifier>', 'the e-mail address (or phone number) they sign in to the console with')
    .argument('<role>', 'operator | admin | support | viewer', roleArg)
    .option('--project <project>', 'the project (name or API key id) of an admin, support or viewer role')
    .action(async (identifier: string, role: ConsoleRole, opts: { project?: string }) => {
      await withRuntime(async (runtime) => {
        const granted = await roster(runtime).grant(identifier, role, opts.project);
        const where = granted.project ? ` of project ${granted.project.name}` : ' (every project)';
        console.log(
          granted.added
            ? `${granted.identifier} is now ${role}${where}`
            : `${granted.identifier} already is ${role}${where}`,
        );
      });
    });

  console_
    .command('revoke')
    .description(
      'take back console roles: all of <identifier>’s, operator, or theirs in --project (only [role] when given)',
    )
    .argument('<identifier>')
    .argument('[role]', 'operator | admin | support | viewer', roleArg)
    .option('--project <project>', 'the project (name or API key id)')
    .action(async (identifier: string, role: ConsoleRole | undefined, opts: { project?: string }) => {
      await withRuntime(async (runtime) => {
        const removed = await roster(runtime).revoke(identifier, role, opts.project);
        console.log(`${removed} console role${removed === 1 ? '' : 's'} taken back`);
        if (removed === 0) process.exitCode = 1;
      });
    });

  console_
    .command('list')
    .description('list console members and their roles')
    .option('--json', 'print JSON')
    .action(async (opts: { json?: boolean }) => {
      await withRuntime(async (runtime) => {
        const members = await roster(runtime).list();
        const rows = members.map((m) => ({
          identifier: m.identifier,
          role: m.role,
          project: m.project_name,
          api_key_id: m.api_key_id,
          user_id: m.user_id,
          granted_at: new Date(m.created_at).toISOString(),
        }));
        if (opts.json) {
          console.log(JSON.stringify(rows, null, 2));
          return;
        }
        if (rows.length === 0) console.log('no console members (tessera console grant <email> operator)');
        for (const row of rows)
          console.log(
            `${row.identifier}  ${row.role.padEnd(8)}  ${row.project ? `${row.project} (${row.api_key_id})` : '(every project)'}  ${row.user_id ? 'signed in' : 'not signed in yet'}`,
          );
      });
    });
}

import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import { createVerifier } from '@tessera/verify';
import { protectedResourceMetadataUrl, tesseraAuth, tesseraProtectedResource } from '@tessera/verify/express';
import express, { type Express, type Request } from 'express';

export interface McpServerOptions {
  /** Tessera's issuer URL, e.g. https://auth.example.com. */
  issuer: string;
  /** The project's API key id: its tokens name it (`api_key_id`). */
  apiKeyId: string;
  /**
   * This server's MCP endpoint as clients reach it, e.g. https://mcp.example.com/mcp: the resource
   * clients ask tokens for (RFC 8707), so the `aud` of the tokens it accepts.
   */
  resource: string;
}

/**
 * An MCP server (the official MCP TypeScript SDK, Streamable HTTP transport, stateless) protected
 * by Tessera as an OAuth resource server: it publishes its Protected Resource Metadata (RFC 9728)
 * naming the project's authorization server, answers 401 with a challenge pointing at it, and
 * accepts only tokens bound to its URL and of its project. One tool, `whoami`, tells the caller
 * what the token says.
 */
export function createMcpApp(options: McpServerOptions): Express {
  const { issuer, apiKeyId, resource } = options;
  const verifier = createVerifier({ issuer, apiKeyId, resource });
  const app = express();
  app.disable('x-powered-by');
  app.use(
    tesseraProtectedResource({
      resource,
      authorizationServers: [`${issuer}/projects/${apiKeyId}`],
      scopesSupported: ['openid', 'email'],
      resourceName: 'Tessera example MCP server',
    }),
  );
  const path = new URL(resource).pathname;
  app.use(path, tesseraAuth(verifier, { resourceMetadata: protectedResourceMetadataUrl(resource) }));
  app.post(path, express.json(), async (req, res) => {
    const server = mcpServer(req);
    // Stateless: a server and a transport per request, closed with it.
    const transport = new StreamableHTTPServerTransport({ sessionIdGenerator: undefined });
    res.on('close', () => {
      void transport.close();
      void server.close();
    });
    await server.connect(transport);
    await transport.handleRequest(req, res, req.body);
  });
  // Stateless servers have no stream to resume or session to end.
  app.all(path, (_req, res) => {
    res.status(405).set('allow', 'POST').json({ error: 'method_not_allowed' });
  });
  return app;
}

function mcpServer(req: Request): McpServer {
  const server = new McpServer({ name: 'tessera-example', version: '0.1.0' });
  server.registerTool(
    'whoami',
    { description: 'Who the access token says you are: user, identifier, client and sign-in method' },
    async () => {
      const claims = req.tessera!;
      const who = {
        user: claims.sub,
        identifier: claims.identifier,
        client_id: claims.client_id,
        authentication_method: claims.authentication_method,
        audience: claims.aud,
      };
      return { content: [{ type: 'text', text: JSON.stringify(who) }], structuredContent: who };
    },
  );
  return server;
}

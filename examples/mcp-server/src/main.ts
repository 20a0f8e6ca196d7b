import { createMcpApp } from './server.js';

const issuer = process.env.TESSERA_ISSUER ?? 'http://localhost:8080';
const apiKeyId = process.env.TESSERA_API_KEY_ID;
if (!apiKeyId) {
  console.error('example-mcp-server: set TESSERA_API_KEY_ID to your project’s API key id');
  process.exit(2);
}
const port = Number(process.env.PORT ?? 3002);
const resource = process.env.MCP_RESOURCE ?? `http://127.0.0.1:${port}/mcp`;
createMcpApp({ issuer, apiKeyId, resource }).listen(port, '127.0.0.1', () =>
  console.log(`MCP server on ${resource} (tokens from ${issuer}, project ${apiKeyId})`),
);

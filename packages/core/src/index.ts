export * from './errors.js';
export * from './sign-in.js';
export * from './tokens.js';
export * from './verify.js';

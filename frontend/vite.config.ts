import react from '@vitejs/plugin-react';
import { copyFileSync, mkdirSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import type { Plugin } from 'vite';
import { defineConfig } from 'vitest/config';

/** Swagger UI's files, copied from the npm package into assets/swagger/: the API's /api/v1/docs page
 *  loads them from the server itself (backend/main.py), so it works offline and its CSP names no CDN. */
export const SWAGGER_FILES = ['swagger-ui-bundle.js', 'swagger-ui.css', 'favicon-32x32.png', 'LICENSE'];

function swaggerUi(): Plugin {
  let outDir = '';
  return {
    name: 'reasonlab-swagger-ui',
    apply: 'build',
    configResolved(config) {
      outDir = config.build.outDir;
    },
    writeBundle() {
      const from = dirname(createRequire(import.meta.url).resolve('swagger-ui-dist/package.json'));
      const to = join(outDir, 'assets', 'swagger');
      mkdirSync(to, { recursive: true });
      for (const f of SWAGGER_FILES) copyFileSync(join(from, f), join(to, f));
    },
  };
}

// Built assets go to backend/static, which the API serves at `/`; `npm run dev` proxies /api to a
// locally running API (`reasonlab up` or `reasonlab api`).
export default defineConfig({
  plugins: [react(), swaggerUi()],
  build: {
    outDir: '../backend/static',
    emptyOutDir: true,
    chunkSizeWarningLimit: 1500,
    rollupOptions: {
      output: {
        // echarts is large and changes rarely: its own chunk caches across releases.
        manualChunks(id: string) {
          if (id.includes('node_modules/echarts') || id.includes('node_modules/zrender')) return 'echarts';
          if (id.includes('node_modules/@mantine')) return 'mantine';
          return undefined;
        },
      },
    },
  },
  server: {
    proxy: { '/api': { target: process.env.REASONLAB_API ?? 'http://127.0.0.1:8000', changeOrigin: true } },
  },
  test: {
    include: ['src/**/*.test.ts', 'src/**/*.test.tsx'],
    environment: 'node',
  },
});

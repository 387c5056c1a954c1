import react from '@vitejs/plugin-react';
import { defineConfig } from 'vitest/config';

// Built assets go to backend/static, which the API serves at `/`; `npm run dev` proxies /api to a
// locally running API (`reasonlab up` or `reasonlab api`).
export default defineConfig({
  plugins: [react()],
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

// What the signed-in layout shows while the first page the browser opened is still coming: its route's
// loader and its lazily loaded code (router.tsx). React Router renders a route's HydrateFallback then,
// and warned "No `HydrateFallback` element provided" on every page load when there was none.
import { Center, Loader } from '@mantine/core';

export function PageLoading() {
  return (
    <Center h="50vh" data-testid="page-loading">
      <Loader size="sm" aria-label="loading the page" />
    </Center>
  );
}

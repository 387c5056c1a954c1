import { Alert, Button, Center, Paper, PasswordInput, Stack, TextInput, Title } from '@mantine/core';
import { useState } from 'react';
import { Navigate, useSearchParams } from 'react-router';
import { authStore } from '../api/auth';
import { errorMessage } from '../api/errors';
import { useLogin, useToken } from '../hooks/auth';

export function LoginPage() {
  const token = useToken();
  const [params] = useSearchParams();
  const [expired] = useState(() => authStore.takeExpiredNotice());
  const [username, setUsername] = useState('');
  const [password, setPassword] = useState('');
  const login = useLogin();
  const next = params.get('next');
  if (token) return <Navigate to={next && next.startsWith('/') ? next : '/'} replace />;
  return (
    <Center h="100vh" bg="gray.0">
      <Paper withBorder shadow="sm" p="xl" w={360}>
        <form
          onSubmit={(e) => {
            e.preventDefault();
            login.mutate({ username, password });
          }}
        >
          <Stack>
            <Title order={3}>Sign in to ReasonLab</Title>
            {expired && <Alert color="yellow">Your session expired; please sign in again.</Alert>}
            {login.error && <Alert color="red" role="alert">{errorMessage(login.error)}</Alert>}
            <TextInput label="Username" name="username" autoComplete="username" value={username} onChange={(e) => setUsername(e.currentTarget.value)} required autoFocus />
            <PasswordInput label="Password" name="password" autoComplete="current-password" value={password} onChange={(e) => setPassword(e.currentTarget.value)} required />
            <Button type="submit" loading={login.isPending}>
              Sign in
            </Button>
          </Stack>
        </form>
      </Paper>
    </Center>
  );
}

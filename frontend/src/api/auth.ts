// The credential of the signed-in user (a JWT from POST /auth/login), kept in localStorage so a reload
// keeps the session; subscribers (the router's auth guard) re-render when it changes or expires.
import { readToken } from '../early';

const TOKEN_KEY = 'reasonlab.token';
const EXPIRES_KEY = 'reasonlab.expires_at';

type Listener = () => void;
const listeners = new Set<Listener>();
let expiredNotice = false;

let current: string | null = typeof localStorage === 'undefined' ? null : readToken();

export const authStore = {
  token: (): string | null => current,
  subscribe(listener: Listener): () => void {
    listeners.add(listener);
    return () => listeners.delete(listener);
  },
  signIn(token: string, expiresAt?: string | null) {
    current = token;
    expiredNotice = false;
    localStorage.setItem(TOKEN_KEY, token);
    if (expiresAt) localStorage.setItem(EXPIRES_KEY, expiresAt);
    else localStorage.removeItem(EXPIRES_KEY);
    listeners.forEach((l) => l());
  },
  signOut() {
    current = null;
    localStorage.removeItem(TOKEN_KEY);
    localStorage.removeItem(EXPIRES_KEY);
    listeners.forEach((l) => l());
  },
  /** Called once by the client on any 401: the session is over, the login page explains why. */
  expire() {
    if (current === null) return;
    expiredNotice = true;
    authStore.signOut();
  },
  /** Whether the last sign-out was an expiry (read once by the login page). */
  takeExpiredNotice(): boolean {
    const was = expiredNotice;
    expiredNotice = false;
    return was;
  },
};

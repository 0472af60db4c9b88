import { describe, expect, it } from 'vitest';
import { dockerBackend } from '../docker-backend.ts';
import { endpointOf, olderVersion } from './engine-api.ts';

describe('engine API endpoint', () => {
  it('reads DOCKER_HOST as the docker client does: a unix socket, plain tcp, or the default socket', () => {
    expect(endpointOf('unix:///run/other.sock')).toEqual({ socketPath: '/run/other.sock' });
    expect(endpointOf('tcp://127.0.0.1:2375')).toEqual({ host: '127.0.0.1', port: 2375 });
    expect(endpointOf(undefined)).toEqual({ socketPath: '/var/run/docker.sock' });
    expect(endpointOf('')).toEqual({ socketPath: '/var/run/docker.sock' });
  });

  it('refuses what it cannot reach, naming it; the docker backend says so as why it cannot run', () => {
    expect(() => endpointOf('ssh://me@host')).toThrow(/ssh:\/\/me@host.*unix:\/\/PATH or plain tcp/);
    const was = process.env.DOCKER_HOST;
    process.env.DOCKER_HOST = 'ssh://me@host';
    try {
      expect(dockerBackend().unavailableReason()).toMatch(/DOCKER_HOST=ssh:\/\/me@host: .*unix:\/\/PATH/);
    } finally {
      if (was === undefined) delete process.env.DOCKER_HOST;
      else process.env.DOCKER_HOST = was;
    }
  });

  it('talks the older of its own API version and the daemon’s', () => {
    expect(olderVersion('1.41', '1.41')).toBe('1.41');
    expect(olderVersion('1.40', '1.41')).toBe('1.40');
    expect(olderVersion('1.50', '1.41')).toBe('1.41');
    expect(olderVersion('1.9', '1.41')).toBe('1.9');
  });
});

// The editor's messages with its host page (docs/embeds.md): events out, and the host's
// openProject, createProject and updateSession in, both only with the framing origin.
import {
  EDITOR_SOURCE, HOST_SOURCE, type EditorEventMap, type EditorEventName, type HostMessage,
} from '../../../sdk/src/protocol.ts';
import { hostOrigin } from '../host.ts';

/** Posts an editor event to the host. */
export type Post = <K extends EditorEventName>(type: K, payload: EditorEventMap[K]) => void;

/** What the editor does on each host message. */
export interface HostCommands {
  openProject(splatId: string): void;
  createProject(): void;
  updateSession(token: unknown): void;
}

/** The channel with the host page. */
export class HostLink {
  /** Where events go and host messages come from (null: nowhere; the console says why). */
  private readonly origin: string | null;

  constructor(params: URLSearchParams) {
    this.origin = hostOrigin('editor', params);
  }

  /** Posts an event to the host (nothing when there is no host origin). */
  readonly post: Post = (type, payload) => {
    if (this.origin) window.parent.postMessage({ source: EDITOR_SOURCE, type, payload }, this.origin);
  };

  /** Hands the host's messages to commands from now on. */
  listen(commands: HostCommands): void {
    window.addEventListener('message', (event: MessageEvent) => {
      if (!this.origin || event.source !== window.parent || event.origin !== this.origin) return;
      const msg = event.data as HostMessage | null;
      if (!msg || typeof msg !== 'object' || msg.source !== HOST_SOURCE) return;
      switch (msg.type) {
        case 'openProject':
          if (typeof msg.payload?.splatId === 'string') commands.openProject(msg.payload.splatId);
          else this.post('error', { message: 'openProject needs a splatId' });
          break;
        case 'createProject':
          commands.createProject();
          break;
        case 'updateSession':
          commands.updateSession(msg.payload?.sessionToken);
          break;
      }
    });
  }
}

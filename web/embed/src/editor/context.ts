// What every part of one editor works with: made once by the editor (editor.ts) and handed to
// each part, so the parts share these and nothing else.
import type { Api } from '../api.ts';
import type { Stage } from '../stage.ts';
import type { Post } from './messages.ts';
import type { Panel } from './panel.ts';
import type { EditorState } from './state.ts';

/** One editor's API client, stage, page, state and channel to the host. */
export interface EditorContext {
  readonly api: Api;
  readonly stage: Stage;
  readonly panel: Panel;
  readonly state: EditorState;
  readonly post: Post;
}

// Editing the scene's audio: upload an .mp3 or .ogg (at once, through the audio route), loop,
// volume, a preview player, and removal.
import type { Actions } from './actions.ts';
import type { EditorContext } from './context.ts';
import type { SetLevelKey } from './state.ts';
import { putSigned } from './uploads.ts';

/** The audio upload route's bound (20 MB). */
const MAX_AUDIO_BYTES = 20_000_000;

function audioType(file: File): 'audio/mpeg' | 'audio/ogg' | null {
  if (file.type === 'audio/mpeg' || /\.mp3$/i.test(file.name)) return 'audio/mpeg';
  if (file.type === 'audio/ogg' || /\.og[ga]$/i.test(file.name)) return 'audio/ogg';
  return null;
}

/** The audio section. */
export class AudioEditor {
  /** A local copy of an audio file picked in this page (its store URL is not readable before the
   * scene is saved), for the preview. */
  private previewUrl: string | null = null;

  constructor(
    private readonly ctx: EditorContext,
    private readonly actions: Actions,
    private readonly setLevelKey: SetLevelKey,
  ) {
    this.bind();
  }

  /** Shows the level's audio in the section. */
  render(): void {
    const audio = this.ctx.state.level.audio;
    const ui = this.ctx.panel.ui;
    this.ctx.panel.audioControls.hidden = !audio;
    if (!audio) {
      ui.audioPreview.removeAttribute('src');
      return;
    }
    ui.audioInfo.textContent = decodeURIComponent(new URL(audio.url, location.href).pathname.split('/').pop() ?? '');
    ui.audioLoop.checked = audio.loop ?? false;
    ui.audioVolume.value = String(audio.volume ?? 1);
    const src = this.previewUrl ?? audio.url;
    if (ui.audioPreview.getAttribute('src') !== src) ui.audioPreview.src = src;
    ui.audioPreview.volume = audio.volume ?? 1;
    ui.audioPreview.loop = audio.loop ?? false;
  }

  /** A new levelData: the local preview of a picked file goes. */
  reset(): void {
    if (this.previewUrl) URL.revokeObjectURL(this.previewUrl);
    this.previewUrl = null;
  }

  private bind(): void {
    const { panel, state } = this.ctx;
    const ui = panel.ui;
    ui.audioFile.addEventListener('change', () => {
      const file = ui.audioFile.files?.[0];
      ui.audioFile.value = '';
      if (!file) return;
      const contentType = audioType(file);
      if (!contentType) {
        panel.say('Pick an .mp3 or .ogg file.', 'error');
        return;
      }
      if (file.size < 1 || file.size > MAX_AUDIO_BYTES) {
        panel.say('An audio file may be at most 20 MB.', 'error');
        return;
      }
      if (!state.editing()) {
        panel.say('Open or pick a scene first.', 'error');
        return;
      }
      this.actions.run('upload', async () => {
        const { body: up } = await this.ctx.api.call('POST', '/api/embed/editor/uploads/audio', { fileName: file.name, contentType, fileSize: file.size });
        panel.say('Uploading the audio…');
        await putSigned(up.uploadUrl, file, contentType);
        if (this.previewUrl) URL.revokeObjectURL(this.previewUrl);
        this.previewUrl = URL.createObjectURL(file);
        this.setLevelKey('audio', { url: up.fileUrl, loop: state.level.audio?.loop ?? true, volume: state.level.audio?.volume ?? 1 });
        panel.say('Audio added: Save keeps it with the scene.');
      });
    });
    ui.audioLoop.addEventListener('change', () => {
      if (state.level.audio) this.setLevelKey('audio', { ...state.level.audio, loop: ui.audioLoop.checked });
    });
    ui.audioVolume.addEventListener('input', () => {
      if (state.level.audio) this.setLevelKey('audio', { ...state.level.audio, volume: Number(ui.audioVolume.value) });
    });
    ui.removeAudio.addEventListener('click', () => {
      ui.audioPreview.pause();
      this.setLevelKey('audio', undefined);
    });
  }
}

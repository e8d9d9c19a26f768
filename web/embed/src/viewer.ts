// The viewer embed (/embed/viewer): shows the session's scene, counts one view per load.
import { Api, readBoot, sendView } from './api.ts';
import { cameraFromLevelData } from './orbit.ts';
import { Stage, formatOfSplat, setStatus, showError } from './stage.ts';

async function main(): Promise<void> {
  setStatus('loading');
  const boot = readBoot();
  if (!boot.splatId) throw new Error('this viewer session names no scene');
  const api = new Api(boot.sessionToken);
  const stage = new Stage(document.body);
  const splat = await api.splat(boot.splatId);
  document.documentElement.dataset.splatId = splat.id;
  if (splat.title) document.title = splat.title;
  sendView(api, splat.id);
  await stage.show({ format: formatOfSplat(splat), url: splat.splatUrl }, cameraFromLevelData(splat.levelData));
  setStatus('rendered');
}

main().catch((err) => {
  console.error('splathost viewer:', err);
  showError(`This scene could not be shown: ${err instanceof Error ? err.message : String(err)}`);
});

// PlayCanvas engine: .ply (plain and compressed), .sog and streamed LOD folders (lod-meta.json),
// as gsplat assets. PlayCanvas draws every format as stored (no axis flip of its own): the
// stage's orientation turns the scene entity.
import * as pc from 'playcanvas';
import { CLEAR_RGB, type Engine, type EngineHooks, type EngineLook, type Quat, type SceneSource } from './engine.ts';
import type { Bounds } from './orbit.ts';

/** A LOD index past any scene's coarsest level: PlayCanvas clamps it to the scene's coarsest. */
const COARSEST = 99;

/** Creates a PlayCanvas application on canvas (its own frame loop; hooks set the camera). */
export function createPlayCanvas(canvas: HTMLCanvasElement, hooks: EngineHooks): Engine {
  const app = new pc.Application(canvas, {
    graphicsDeviceOptions: {
      deviceTypes: ['webgl2'],
      antialias: false,
      alpha: false,
      // Lets the stage (and tests) read pixels between frames.
      preserveDrawingBuffer: true,
    },
  });
  // The canvas fills its container (the whole window in the viewer, the area left of the panel
  // in the editor): the page's CSS sizes it, and the drawing buffer follows its CSS size.
  app.setCanvasFillMode(pc.FILLMODE_NONE);
  app.setCanvasResolution(pc.RESOLUTION_AUTO);
  const resized = new ResizeObserver(() => app.updateCanvasSize());
  resized.observe(canvas);

  const camera = new pc.Entity('camera');
  camera.addComponent('camera', {
    clearColor: new pc.Color(CLEAR_RGB[0] / 255, CLEAR_RGB[1] / 255, CLEAR_RGB[2] / 255, 1),
    fov: 60,
  });
  app.root.addChild(camera);

  app.on('update', () => {
    const c = hooks.camera();
    const cam = camera.camera!;
    camera.setPosition(c.position[0], c.position[1], c.position[2]);
    camera.lookAt(c.target[0], c.target[1], c.target[2]);
    cam.fov = c.fov ?? 60;
    // Clip planes follow the orbit distance, so small and large scenes both keep depth precision.
    const dist = Math.hypot(c.position[0] - c.target[0], c.position[1] - c.target[1], c.position[2] - c.target[2]);
    cam.nearClip = Math.max(1e-3, dist / 1000);
    cam.farClip = Math.max(100, dist * 100);
  });
  // A streamed scene loads coarse first: the whole scene at its coarsest level (its component's
  // lodRangeMin held at the coarsest), then every level the view needs. Meanwhile a part whose
  // level is still loading shows the finest level it has (any number of levels coarser), so
  // rendering never waits for a finer level.
  app.scene.gsplat.lodUnderfillLimit = COARSEST;
  // 'coarse' while a streamed scene is held at its coarsest level, 'full' after; null before a
  // scene is shown.
  let stage: 'coarse' | 'full' | null = null;
  // Set by frame:ready when the frame about to be drawn shows the whole loaded scene, sorted,
  // with nothing left loading; frameend then reports it, once the frame is drawn.
  let whole = false;
  // Frames to let pass after the LOD range widens: its re-evaluation starts on the next update,
  // and until then frame:ready still reports the coarse state.
  let settle = 0;
  app.systems.gsplat!.on('frame:ready', (_camera: unknown, _layer: unknown, ready: boolean, loadingCount: number) => {
    if (stage && settle === 0 && ready && !loadingCount) whole = true;
  });
  app.on('frameend', () => {
    hooks.frame();
    if (settle > 0) settle--;
    if (!whole || !stage) return;
    whole = false;
    if (stage === 'full') {
      hooks.whole(true);
      return;
    }
    hooks.whole(false);
    stage = 'full';
    settle = 2;
    if (entity?.gsplat) entity.gsplat.lodRangeMin = 0;
  });
  app.start();

  const TONE: Record<EngineLook['toneMapping'], number> = {
    linear: pc.TONEMAP_LINEAR, aces: pc.TONEMAP_ACES, neutral: pc.TONEMAP_NEUTRAL,
  };
  let objectUrl: string | null = null;
  let entity: pc.Entity | null = null;
  let rotation: Quat = [0, 0, 0, 1];
  return {
    setRotation(q: Quat) {
      rotation = q;
      entity?.setLocalRotation(q[0], q[1], q[2], q[3]);
    },
    setLook(look: EngineLook) {
      const cam = camera.camera!;
      // The clear colour is written as given (not tone mapped), so the canvas shows it exactly.
      cam.clearColor = new pc.Color(look.background[0] / 255, look.background[1] / 255, look.background[2] / 255, 1);
      // The gsplat shader decodes the splat colour from gamma, applies toneMap (which multiplies
      // by the scene's exposure outside physical units) and encodes it again.
      cam.toneMapping = TONE[look.toneMapping];
      app.scene.exposure = look.exposure;
    },
    load(src: SceneSource): Promise<Bounds> {
      return new Promise((resolve, reject) => {
        let file: { url: string; filename?: string };
        if (src.file) {
          // The parser is chosen by the file name's extension, the bytes come from a blob URL.
          objectUrl = URL.createObjectURL(src.file);
          file = { url: objectUrl, filename: src.file.name };
        } else {
          file = { url: src.url! };
        }
        const asset = new pc.Asset('scene', 'gsplat', file);
        asset.once('load', () => {
          entity = new pc.Entity('scene');
          const streamed = src.format === 'lod';
          entity.addComponent('gsplat', streamed ? { asset, lodRangeMin: COARSEST } : { asset });
          stage = streamed ? 'coarse' : 'full';
          entity.setLocalRotation(rotation[0], rotation[1], rotation[2], rotation[3]);
          app.root.addChild(entity);
          const aabb = (asset.resource as { aabb: pc.BoundingBox }).aabb;
          const min = aabb.getMin();
          const max = aabb.getMax();
          resolve({ min: [min.x, min.y, min.z], max: [max.x, max.y, max.z] });
        });
        asset.once('error', (err: unknown) => reject(new Error(`could not load the scene: ${err}`)));
        app.assets.add(asset);
        app.assets.load(asset);
      });
    },
    destroy() {
      resized.disconnect();
      app.destroy();
      if (objectUrl) URL.revokeObjectURL(objectUrl);
    },
  };
}

// Spark + three engine: the formats only Spark reads, .splat and .ksplat.
import * as THREE from 'three';
import { SparkRenderer, SplatFileType, SplatMesh } from '@sparkjsdev/spark';
import { CLEAR_RGB, type Engine, type EngineHooks, type SceneSource } from './stage.ts';
import type { Bounds } from './orbit.ts';

const FILE_TYPES: Partial<Record<SceneSource['format'], SplatFileType>> = {
  splat: SplatFileType.SPLAT,
  ksplat: SplatFileType.KSPLAT,
  ply: SplatFileType.PLY,
};

/** Creates a three renderer with Spark on canvas and runs its frame loop. */
export function createSpark(canvas: HTMLCanvasElement, hooks: EngineHooks): Engine {
  // preserveDrawingBuffer lets the stage (and tests) read pixels between frames.
  const renderer = new THREE.WebGLRenderer({ canvas, antialias: false, alpha: false, preserveDrawingBuffer: true });
  renderer.setPixelRatio(Math.min(window.devicePixelRatio || 1, 2));
  // The clear colour is given in sRGB, so the canvas shows exactly CLEAR_RGB.
  renderer.setClearColor(new THREE.Color().setRGB(CLEAR_RGB[0] / 255, CLEAR_RGB[1] / 255, CLEAR_RGB[2] / 255, THREE.SRGBColorSpace), 1);
  const scene = new THREE.Scene();
  const camera = new THREE.PerspectiveCamera(60, 1, 0.01, 1000);
  scene.add(new SparkRenderer({ renderer }));

  // The canvas fills its container (the page's CSS sizes it); the drawing buffer follows.
  const resize = () => {
    const w = canvas.clientWidth || 1;
    const h = canvas.clientHeight || 1;
    renderer.setSize(w, h, false);
    camera.aspect = w / h;
  };
  resize();
  const resized = new ResizeObserver(resize);
  resized.observe(canvas);

  renderer.setAnimationLoop(() => {
    const c = hooks.camera();
    camera.position.set(...c.position);
    camera.lookAt(...c.target);
    camera.fov = c.fov ?? 60;
    const dist = camera.position.distanceTo(new THREE.Vector3(...c.target));
    camera.near = Math.max(1e-3, dist / 1000);
    camera.far = Math.max(100, dist * 100);
    camera.updateProjectionMatrix();
    renderer.render(scene, camera);
    hooks.frame();
  });

  let mesh: SplatMesh | null = null;
  return {
    async load(src: SceneSource): Promise<Bounds> {
      // fileType is passed always: a stored URL or a picked file may not carry the extension.
      const fileType = FILE_TYPES[src.format];
      mesh = src.file
        ? new SplatMesh({ fileBytes: await src.file.arrayBuffer(), fileType, fileName: src.file.name })
        : new SplatMesh({ url: src.url!, fileType });
      scene.add(mesh);
      await mesh.initialized;
      const box = mesh.getBoundingBox(false);
      return { min: box.min.toArray(), max: box.max.toArray() };
    },
    destroy() {
      resized.disconnect();
      renderer.setAnimationLoop(null);
      mesh?.dispose();
      renderer.dispose();
      renderer.forceContextLoss();
    },
  };
}

// The .sog and streamed-SOG (LOD) scans (PlayCanvas) upright: see orientation-common.mjs.
import { orientationTests } from './orientation-common.mjs';

orientationTests(['sog', 'lod']);

/** Paths of the checkout the tests read: the kit's shared vectors and the model set. */
import * as path from 'path';

export const REPO_ROOT = path.resolve(__dirname, '..', '..', '..');
export const VECTORS_PATH = path.join(REPO_ROOT, 'kit', 'data', 'protocol_vectors.json');
export const MODELS_DIR = process.env.COLDSTART_MODELS ?? path.join(REPO_ROOT, 'models');

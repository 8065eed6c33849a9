/** The Soperator revision whose exporter tests the cluster tests re-create, with their inputs. */
export const SOPERATOR_COMMIT = '2bfb862ac772db115bafd68a8bfbc2aa95bbe068';

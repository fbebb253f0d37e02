export async function runSessionWrapper(_args: string[]): Promise<number> { throw new Error("session wrapper: not built yet"); }

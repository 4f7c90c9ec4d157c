import type { AppView } from "../../routes/apps-read.ts";
import type { Command } from "../command.ts";
import { loadConfig, readAnswer, request } from "../config.ts";

export const apps: Command = {
  name: "apps",
  summary: "list the apps deployed in the project",
  usage: "Usage: runlet apps [--json]",
  options: {},
  async run({ values }) {
    const config = await loadConfig();
    const res = await request(
      `${config.baseUrl}/v2/projects/${config.projectId}/apps`,
      { headers: { authorization: `Bearer ${config.token}` } },
      "listing apps",
    );
    const body = await readAnswer<{ apps: AppView[] }>(res, "listing apps");
    if (values.json) {
      console.log(JSON.stringify(body));
    } else if (body.apps.length === 0) {
      console.log("No apps yet: npx runlet deploy examples/hello");
    } else {
      for (const a of body.apps)
        console.log(
          `${a.name.padEnd(24)} v${String(a.version).padEnd(5)} ${a.runtime.padEnd(8)} ${a.updatedAt}`,
        );
    }
    return 0;
  },
};

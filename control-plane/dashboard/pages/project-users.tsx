/**
 * The project's users, read-only, on the API keys page: who may use the project, with what role,
 * and when their token expires (never a token). Changed with `runlet users …` (docs/deploy.md,
 * "More users and projects"); the list comes from `GET /v2/projects/{id}/users`, so owners only,
 * who are offered the project's deletion below it (project-delete.tsx).
 */
import { tokenState } from "../../../common/token-state.ts";
import type { Answer } from "../api.ts";
import { EmptyRow, Notice, Status, Table, Time } from "../ui.tsx";
import { DELETE_PROJECT_PATH } from "./project-delete.tsx";

export interface ProjectUser {
  id: string;
  name: string;
  role: string;
  operator: boolean;
  tokenExpiresAt: string | null;
  tokenLastUsedAt: string | null;
  tokenKeyRetiredAt?: string | null;
}

export function ProjectUsers({ listed }: { listed: Answer<{ users: ProjectUser[] }> }) {
  if (!listed.ok) return <Notice kind="error">{listed.message}</Notice>;
  return (
    <>
      <h2>Users</h2>
      <p class="muted">
        Add, re-role or remove users, and renew or revoke their tokens, with{" "}
        <code>runlet users</code> (owners; adding users and their tokens: operators).
      </p>
      <Table label="Users" head={["Name", "Role", "Operator", "Token", "Expires", "Last used"]}>
        {listed.data.users.length === 0 ? (
          <EmptyRow span={6}>None.</EmptyRow>
        ) : (
          listed.data.users.map((u) => (
            <tr>
              <td class="name" title={u.id}>
                {u.name}
              </td>
              <td>{u.role}</td>
              <td>{u.operator ? "yes" : "no"}</td>
              <td>
                <Status
                  value={tokenState({
                    expiresAt: u.tokenExpiresAt,
                    keyRetiredAt: u.tokenKeyRetiredAt,
                  })}
                />
              </td>
              <td>{u.tokenExpiresAt ? <Time at={u.tokenExpiresAt} /> : null}</td>
              <td>
                {u.tokenLastUsedAt ? (
                  <Time at={u.tokenLastUsedAt} />
                ) : u.tokenExpiresAt ? (
                  <span class="muted">never</span>
                ) : null}
              </td>
            </tr>
          ))
        )}
      </Table>
      <h2>This project</h2>
      <p>
        <a href={DELETE_PROJECT_PATH}>Delete the project…</a>{" "}
        <span class="muted">(once it has no apps; asks first)</span>
      </p>
    </>
  );
}

// The dashboard's routes live in the fragment: #/, #/new, #/usage, #/swarms/:id, #/swarms/:id/tasks/:task.
export type Route = { page: "list" } | { page: "new" } | { page: "usage" } | { page: "swarm"; id: string } | { page: "task"; id: string; taskId: string };

export function parseRoute(hash: string): Route {
  const parts = hash
    .replace(/^#\/?/, "")
    .split("/")
    .filter((p) => p !== "")
    .map(decodeURIComponent);
  if (parts[0] === "new") return { page: "new" };
  if (parts[0] === "usage") return { page: "usage" };
  if (parts[0] === "swarms" && parts[1] !== undefined) {
    if (parts[2] === "tasks" && parts[3] !== undefined) return { page: "task", id: parts[1], taskId: parts.slice(3).join("/") };
    return { page: "swarm", id: parts[1] };
  }
  return { page: "list" };
}

export const hrefOf = (route: Route): string => {
  switch (route.page) {
    case "list":
      return "#/";
    case "new":
      return "#/new";
    case "usage":
      return "#/usage";
    case "swarm":
      return `#/swarms/${encodeURIComponent(route.id)}`;
    case "task":
      return `#/swarms/${encodeURIComponent(route.id)}/tasks/${encodeURIComponent(route.taskId)}`;
  }
};

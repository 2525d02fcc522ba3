// The gateways' load reports to the operator's autoscaler (see operator/controller/autoscaler.ts): every gateway POSTs
// a full snapshot of its in-flight counts to every operator replica,
//   POST /v1/load  {"gateway": "<id>", "apps": [{"namespace": "<org>", "name": "<app>", "inFlight": <n>}]}
// with `Authorization: Bearer <ServiceAccount token>`; the operator checks the token with a TokenReview and accepts
// only the ServiceAccounts its config names (operator/config.ts `loadReports.serviceAccounts`).
import { z } from "zod";

export const LOAD_REPORT_PATH = "/v1/load";

export const LoadReportSchema = z.object({
  gateway: z.string().min(1).max(253).describe("Identity of the reporting gateway instance."),
  apps: z
    .array(
      z.object({
        namespace: z.string().min(1).max(63),
        name: z.string().min(1).max(63),
        inFlight: z.int().min(0).max(1_000_000).describe("Requests being served or held for the app right now."),
      }),
    )
    .max(100_000),
});
export type LoadReport = z.infer<typeof LoadReportSchema>;

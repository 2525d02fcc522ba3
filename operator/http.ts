// The operator's HTTP surface: /healthz (the process serves), /readyz (caches synced, or why not), /metrics
// (Prometheus) and the gateways' load reports (POST /v1/load, see api/v1alpha1/load-report.ts; authenticated by
// load-auth.ts). Errors are {"error": "..."} with a 4xx.
import express, { type ErrorRequestHandler } from "express";
import { AppError, fromBodyParserError, isServerFault, ollamaErrorBody, toAppError } from "../server/common/errors.ts";
import type { Logger } from "../server/common/logger.ts";
import { parseBody } from "../server/common/validate.ts";
import { LOAD_REPORT_PATH, LoadReportSchema } from "./api/v1alpha1/load-report.ts";
import type { Controller } from "./controller/controller.ts";
import type { LoadReportAuth } from "./load-auth.ts";

export function createOperatorApp(
  controller: Pick<Controller, "readiness" | "isLeader" | "metrics" | "recordLoad">,
  logger: Logger,
  loadAuth: Pick<LoadReportAuth, "check">,
): express.Express {
  const app = express();
  app.disable("x-powered-by");
  app.get("/healthz", (_req, res) => {
    res.json({ status: "ok" });
  });
  app.get("/readyz", (_req, res) => {
    const { ready, reason } = controller.readiness;
    res
      .status(ready ? 200 : 503)
      .json({ status: ready ? "ok" : "syncing", leader: controller.isLeader, ...(reason ? { reason } : {}) });
  });
  app.get("/metrics", async (_req, res) => {
    res.type(controller.metrics.registry.contentType).send(await controller.metrics.registry.metrics());
  });
  app.post(
    LOAD_REPORT_PATH,
    async (req, _res, next) => {
      await loadAuth.check(req.headers.authorization);
      next();
    },
    express.json({ limit: "4mb", type: () => true }),
    (req, res) => {
      controller.recordLoad(parseBody(LoadReportSchema, req.body));
      res.status(204).end();
    },
  );
  app.use((req, _res, next) => {
    next(new AppError("NOT_FOUND", `${req.method} ${req.path} does not exist`));
  });
  const onError: ErrorRequestHandler = (err, req, res, _next) => {
    const e = fromBodyParserError(err) ?? toAppError(err);
    for (const [k, v] of Object.entries(e.headers)) res.setHeader(k, v);
    if (isServerFault(e.code)) logger.error({ err: e.cause ?? e, route: req.path }, "request failed");
    res.status(e.status).json(ollamaErrorBody(e));
  };
  app.use(onError);
  return app;
}

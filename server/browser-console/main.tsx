// The console's entry: styles, then the app into #app.
import "uplot/dist/uPlot.min.css";
import "./styles.css";
import { render } from "preact";
import { App } from "./app.tsx";

render(<App />, document.getElementById("app")!);

// A real browser through the OAuth pages: sign in, register an application, authorize it,
// and land on the redirect URI with a code, which is then exchanged for a token. The CSRF
// token is checked on the way: a consent form whose token was tampered with is refused.
//
// Usage: node tests/browser/oauth_flow.mjs <base-url> <username> <password>
// Exits 0 when every step passed; prints what failed otherwise.

import { chromium } from 'playwright-core';

const [base, username, password] = process.argv.slice(2);
if (!base || !username || !password) {
  console.error('usage: oauth_flow.mjs <base-url> <username> <password>');
  process.exit(2);
}
const REDIRECT = 'https://client.example/callback';

function check(condition, message) {
  if (!condition) throw new Error(message);
  console.log(`ok - ${message}`);
}

const browser = await chromium.launch({
  executablePath: process.env.CHROMIUM_PATH || '/usr/bin/chromium',
  headless: true,
});
try {
  const context = await browser.newContext();
  const page = await context.newPage();
  // The client application's redirect URI: answered here instead of on the network.
  let landed = null;
  await page.route(`${REDIRECT}**`, (route) => {
    landed = route.request().url();
    route.fulfill({ status: 200, contentType: 'text/html', body: '<p>client landed</p>' });
  });

  // Sign in (the applications page sends an anonymous visitor there and back).
  await page.goto(`${base}/profile/applications`);
  check(page.url().startsWith(`${base}/users/sign_in`), 'redirected to the sign-in page');
  await page.getByLabel('Username or primary email').fill(username);
  await page.getByLabel('Password').fill(password);
  await page.getByRole('button', { name: 'Sign in' }).click();
  await page.waitForURL(`${base}/profile/applications`);
  check(await page.getByRole('heading', { name: 'Applications', exact: true }).isVisible(), 'signed in');

  // Register an application.
  await page.getByLabel('Name').fill('Browser app');
  await page.getByLabel('Redirect URI (one per line)').fill(REDIRECT);
  await page.locator('#doorkeeper_application_scopes_api').check();
  await page.getByRole('button', { name: 'Save application' }).first().click();
  await page.waitForSelector('#client_secret');
  const clientId = (await page.locator('#application_id').textContent()).trim();
  const secret = (await page.locator('#client_secret').textContent()).trim();
  check(/^[0-9a-f]{64}$/.test(clientId), 'application id shown');
  check(secret.startsWith('gloas-'), 'secret shown once, prefixed gloas-');

  // Authorize it: the consent page names the application and the scope.
  const state = 'browser-state-1';
  const authorize = `${base}/oauth/authorize?` + new URLSearchParams({
    client_id: clientId, redirect_uri: REDIRECT, response_type: 'code', scope: 'api', state,
  });
  await page.goto(authorize);
  check(await page.getByText('Browser app').first().isVisible(), 'consent page names the application');

  // A tampered CSRF token is refused.
  await page.locator('form').filter({ has: page.getByRole('button', { name: 'Authorize' }) })
    .locator('input[name="authenticity_token"]').evaluate((input) => { input.value = 'f'.repeat(64); });
  const refused = page.waitForResponse((r) => r.url() === `${base}/oauth/authorize` && r.request().method() === 'POST');
  await page.getByRole('button', { name: 'Authorize' }).click();
  check((await refused).status() === 422, 'consent with a wrong CSRF token is refused (422)');
  check(landed === null, 'no redirect to the client without a valid CSRF token');

  // With the real token the browser lands on the redirect URI with a code and the state.
  await page.goto(authorize);
  await page.getByRole('button', { name: 'Authorize' }).click();
  await page.waitForURL(`${REDIRECT}**`);
  const url = new URL(landed);
  const code = url.searchParams.get('code');
  check(code && /^[0-9a-f]{64}$/.test(code), 'landed on the redirect URI with a code');
  check(url.searchParams.get('state') === state, 'state echoed');

  // The code is real: exchange it for a token and call the API.
  const tokenResponse = await fetch(`${base}/oauth/token`, {
    method: 'POST',
    headers: {
      'Content-Type': 'application/x-www-form-urlencoded',
      Authorization: 'Basic ' + Buffer.from(`${clientId}:${secret}`).toString('base64'),
    },
    body: new URLSearchParams({ grant_type: 'authorization_code', code, redirect_uri: REDIRECT }),
  });
  const token = await tokenResponse.json();
  check(tokenResponse.status === 200 && token.access_token, 'code exchanged for an access token');
  const user = await fetch(`${base}/api/v4/user`, { headers: { Authorization: `Bearer ${token.access_token}` } });
  check((await user.json()).username === username, 'the token calls the REST API as the user');
  console.log('browser oauth flow: all steps passed');
} catch (error) {
  console.error(`not ok - ${error.message}`);
  process.exitCode = 1;
} finally {
  await browser.close();
}
